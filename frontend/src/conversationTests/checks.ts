// Check kinds as the test editor offers them (docs/conversation-tests.md#checks): their fields, a default for each,
// and one line that says what a check expects. Pure: tested without a DOM.
import { textOf } from '../ui/format';
import type { Check } from './api';

export type Field = 'text' | 'pattern' | 'node' | 'memory' | 'tokens' | 'rubric' | 'model' | 'provider';

export interface KindSpec {
  kind: string;
  label: string;
  /** The check's value is a plain string (reply checks) rather than an object of these fields. */
  scalar?: 'text' | 'pattern';
  fields: Field[];
}

export const CHECK_KINDS: KindSpec[] = [
  { kind: 'reply_contains', label: 'Reply contains', scalar: 'text', fields: ['text'] },
  { kind: 'reply_not_contains', label: 'Reply does not contain', scalar: 'text', fields: ['text'] },
  { kind: 'reply_matches', label: 'Reply matches (regex, any case)', scalar: 'pattern', fields: ['pattern'] },
  { kind: 'sent_contains', label: 'Model was sent', fields: ['node', 'text'] },
  { kind: 'sent_excludes', label: 'Model was not sent', fields: ['node', 'text'] },
  { kind: 'sent_tokens_at_most', label: 'Model was sent at most N tokens', fields: ['node', 'tokens'] },
  { kind: 'summary_contains', label: 'Memory summary contains', fields: ['memory', 'text'] },
  { kind: 'judge', label: 'A model judges the reply', fields: ['rubric', 'model', 'provider'] },
];

export const kindSpec = (kind: string) => CHECK_KINDS.find((k) => k.kind === kind);

export function kindOf(check: Check): string {
  return Object.keys(check)[0] ?? '';
}

/** The check's value as a flat record of the editor's fields. */
export function fieldsOf(check: Check): Record<string, string | number | null> {
  const kind = kindOf(check);
  const value = check[kind];
  const spec = kindSpec(kind);
  if (spec?.scalar) return { [spec.scalar]: typeof value === 'string' ? value : '' };
  return value && typeof value === 'object' ? (value as Record<string, string | number | null>) : {};
}

/** A check of `kind` from the editor's fields; empty optional fields are left out. */
export function makeCheck(kind: string, fields: Record<string, string | number | null | undefined>): Check {
  const spec = kindSpec(kind);
  if (!spec) return { [kind]: fields };
  if (spec.scalar) return { [kind]: String(fields[spec.scalar] ?? '') };
  const value: Record<string, unknown> = {};
  for (const field of spec.fields) {
    const v = fields[field];
    if (field === 'provider') {
      if (v !== '' && v !== null && v !== undefined) value.provider = Number(v);
    } else if (field === 'tokens') value.tokens = Number(v ?? 0);
    else value[field] = v ?? '';
  }
  return { [kind]: value };
}

export interface Targets {
  /** Nodes whose model calls are recorded (llm, router.llm). */
  modelNodes: string[];
  /** Memories with a running summary: memory.summary node ids (and named histories' names). */
  summaryMemories: string[];
}

export function targetsOf(nodes: { id: string; type?: string; data?: Record<string, unknown> }[]): Targets {
  const modelNodes = nodes.filter((n) => n.type === 'llm' || n.type === 'router.llm').map((n) => n.id).sort();
  const summaryMemories: string[] = [];
  for (const n of nodes) {
    if (n.type !== 'memory.summary') continue;
    summaryMemories.push(n.id);
    if (n.data?.history === 'named' && typeof n.data.name === 'string' && n.data.name) summaryMemories.push(n.data.name);
  }
  return { modelNodes, summaryMemories: [...new Set(summaryMemories)].sort() };
}

/** A check for the first node or memory it can name, ready to edit. */
export function defaultCheck(kind: string, targets: Targets, reference = ''): Check {
  const node = targets.modelNodes[0] ?? '';
  const memory = targets.summaryMemories[0] ?? '';
  const text = reference.slice(0, 80);
  return makeCheck(kind, { text, pattern: '', node, memory, tokens: 1000, rubric: '', model: 'gpt-4o-mini', provider: null });
}

const quoted = (text: unknown) => `“${textOf(text)}”`;

/** One line saying what a check expects. */
export function describeCheck(check: Check): string {
  const kind = kindOf(check);
  const f = fieldsOf(check);
  switch (kind) {
    case 'reply_contains':
      return `reply contains ${quoted(f.text)}`;
    case 'reply_not_contains':
      return `reply does not contain ${quoted(f.text)}`;
    case 'reply_matches':
      return `reply matches /${f.pattern ?? ''}/i`;
    case 'sent_contains':
      return `${f.node} was sent ${quoted(f.text)}`;
    case 'sent_excludes':
      return `${f.node} was not sent ${quoted(f.text)}`;
    case 'sent_tokens_at_most':
      return `${f.node} was sent at most ${f.tokens} tokens`;
    case 'summary_contains':
      return `summary of ${f.memory} contains ${quoted(f.text)}`;
    case 'judge':
      return `judge (${f.model}): ${f.rubric}`;
    default:
      return kind || 'empty check';
  }
}

/** "3 passed · 1 failed · 1 error" for a run's counts (only the ones that are not zero, but at least one). */
export function countsLine(run: { passed: number; failed: number; errors: number; total?: number }): string {
  const parts = [`${run.passed} passed`];
  if (run.failed) parts.push(`${run.failed} failed`);
  if (run.errors) parts.push(`${run.errors} error${run.errors === 1 ? '' : 's'}`);
  if (run.total !== undefined) {
    const left = run.total - run.passed - run.failed - run.errors;
    if (left > 0) parts.push(`${left} to go`);
  }
  return parts.join(' · ');
}

export const versionLabel = (version: number | 'draft') => (version === 'draft' ? 'draft' : `v${version}`);

export const isFinished = (status: string) => status === 'passed' || status === 'failed' || status === 'error';
