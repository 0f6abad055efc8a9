// What the editor does with the test chat's events: light the nodes up as they run (a tool node
// while an agent's call of it runs), put warnings
// and errors on the nodes, and keep the last turn (its run, status, warnings) for the links below
// the chat.
import type { RunWarning, ValidationIssue } from '../api/types';
import type { ServerEvent } from '../chat/transport';
import type { EditorState } from './store';

export interface Turn {
  run: number | null;
  status: 'running' | 'succeeded' | 'failed';
  error?: string;
  warnings: RunWarning[];
}

export interface TestChatHooks {
  nodeEvent: EditorState['nodeEvent'];
  toolStarted: EditorState['toolStarted'];
  toolFinished: EditorState['toolFinished'];
  setIssues: (issues: ValidationIssue[]) => void;
  setTurn: (update: (turn: Turn | null) => Turn | null) => void;
  /** Load the run's trace onto the canvas (every step, skipped branches included). */
  showRun: (run: number, warnings: RunWarning[]) => void;
}

const text = (value: unknown) => (typeof value === 'string' && value ? value : undefined);
const id = (value: unknown) => (typeof value === 'number' ? value : null);

function warningsOf(value: unknown): RunWarning[] {
  if (!Array.isArray(value)) return [];
  return value.map((w: unknown) => {
    const warning: Partial<Record<string, unknown>> = typeof w === 'object' && w !== null ? w : {};
    return { node: text(warning.node) ?? null, message: text(warning.message) ?? 'warning' };
  });
}

export function handleTestChatEvent(event: ServerEvent, hooks: TestChatHooks): void {
  const data = event.data as Record<string, unknown>;
  const run = id(data.run);
  switch (event.type) {
    case 'accepted':
      hooks.setTurn(() => ({ run, status: 'running', warnings: [] }));
      break;
    case 'node.started':
      hooks.nodeEvent(String(data.node), { status: 'running' });
      break;
    case 'node.finished':
      hooks.nodeEvent(String(data.node), {
        status: data.status === 'failed' ? 'failed' : 'succeeded',
        error: text(data.error),
        durationMs: id(data.duration_ms) ?? undefined,
      });
      break;
    case 'tool.started':
      // A call of no tool node (the model named a tool that does not exist) lights nothing.
      if (text(data.node) && text(data.call_id)) hooks.toolStarted(String(data.node), String(data.call_id));
      break;
    case 'tool.finished':
      if (text(data.node) && text(data.call_id)) {
        hooks.toolFinished(String(data.node), String(data.call_id), {
          error: data.status === 'failed' ? (text(data.error) ?? 'the call failed') : undefined,
          durationMs: id(data.duration_ms) ?? undefined,
        });
      }
      break;
    case 'memory.summarizing':
      // The memory and the model summarizing for it light up while the summary is made.
      for (const node of [text(data.node), text(data.summarizer)]) if (node) hooks.nodeEvent(node, { status: 'running' });
      break;
    case 'memory.summarized':
      for (const node of [text(data.node), text(data.summarizer)]) {
        if (node) hooks.nodeEvent(node, { status: 'succeeded', durationMs: id(data.duration_ms) ?? undefined });
      }
      break;
    case 'memory.warning': {
      const warning = { node: text(data.node) ?? null, message: text(data.message) ?? 'warning' };
      // The memory still delivered (the uncompressed history): it stops running, with its warning.
      if (warning.node) hooks.nodeEvent(warning.node, { warning: warning.message, status: 'succeeded' });
      hooks.setTurn((turn) => turn && { ...turn, warnings: [...turn.warnings, warning] });
      break;
    }
    case 'run.finished': {
      const warnings = warningsOf(data.warnings);
      hooks.setTurn((turn) => ({ run, status: 'succeeded', warnings: warnings.length ? warnings : (turn?.warnings ?? []) }));
      if (run !== null) hooks.showRun(run, warnings);
      break;
    }
    case 'run.failed':
      hooks.setTurn((turn) => ({ run, status: 'failed', error: text(data.error), warnings: turn?.warnings ?? [] }));
      if (run !== null) hooks.showRun(run, []);
      break;
    case 'error': {
      const issues = Array.isArray(data.errors) ? (data.errors as ValidationIssue[]) : [];
      if (issues.length) hooks.setIssues(issues);
      hooks.setTurn((turn) => ({ run: run ?? turn?.run ?? null, status: 'failed', error: text(data.message), warnings: turn?.warnings ?? [] }));
      if (run !== null) hooks.showRun(run, []);
      break;
    }
  }
}
