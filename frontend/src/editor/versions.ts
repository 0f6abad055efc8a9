// What a version diff says, as lines a person reads (the Versions menu).
import type { GraphDiff } from '../api/ecosystem';

export interface DiffLine {
  kind: 'added' | 'removed' | 'changed' | 'moved';
  text: string;
}

function short(value: unknown): string {
  if (value === null || value === undefined) return '(default)';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

export function describeDiff(diff: GraphDiff): DiffLine[] {
  const lines: DiffLine[] = [];
  for (const n of diff.nodes.added) lines.push({ kind: 'added', text: `node ${n.id} (${n.type})` });
  for (const n of diff.nodes.removed) lines.push({ kind: 'removed', text: `node ${n.id} (${n.type})` });
  for (const n of diff.nodes.changed) {
    if (n.type_from) lines.push({ kind: 'changed', text: `node ${n.id}: type ${n.type_from} → ${n.type}` });
    for (const [param, change] of Object.entries(n.params)) {
      lines.push({ kind: 'changed', text: `node ${n.id}: ${param} ${short(change.from)} → ${short(change.to)}` });
    }
  }
  const edge = (e: GraphDiff['edges']['added'][number]) => `${e.source}.${e.sourceHandle ?? 'output'} → ${e.target}.${e.targetHandle ?? 'input'}`;
  for (const e of diff.edges.added) lines.push({ kind: 'added', text: `edge ${edge(e)}` });
  for (const e of diff.edges.removed) lines.push({ kind: 'removed', text: `edge ${edge(e)}` });
  if (diff.nodes.moved.length) lines.push({ kind: 'moved', text: `moved: ${diff.nodes.moved.join(', ')}` });
  return lines;
}
