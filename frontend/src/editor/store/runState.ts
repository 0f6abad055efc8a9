// The last run's state per node, as the canvas shows it: from a finished run (its steps, the tool
// calls of its models' rounds, and its warnings), or live from the test chat's events while a turn
// runs. A tool node has no step of its own: it is lit by the calls an agent made of it.
import type { Run, RunWarning } from '../../api/types';
import type { EditorSlice } from './types';

export interface NodeRunState {
  status: 'running' | 'succeeded' | 'failed' | 'skipped';
  error?: string;
  warnings: string[];
  durationMs?: number | null;
  /** A tool node: the ids of its calls still running (parallel calls of one tool overlap). */
  calls?: string[];
}

/** How a call of a tool ended (`error`: what the model was told instead of a result). */
export interface ToolCallEnd {
  error?: string;
  durationMs?: number;
}

export interface RunSlice {
  runState: Record<string, NodeRunState>;
  lastRunId: number | null;
  startRun: () => void;
  showRun: (run: Run, extraWarnings?: RunWarning[]) => void;
  /** A live event of the running turn: a node started or finished, or a memory warned. */
  nodeEvent: (node: string, change: { status?: NodeRunState['status']; error?: string; durationMs?: number; warning?: string }) => void;
  /** A live call of a tool node started (`tool.started`) or ended (`tool.finished`). */
  toolStarted: (node: string, callId: string) => void;
  toolFinished: (node: string, callId: string, end: ToolCallEnd) => void;
  clearRun: () => void;
}

export const FRESH_RUN = { runState: {}, lastRunId: null } satisfies Partial<RunSlice>;

/** Each node's state in a finished run: its step, and its warnings (each once; extra ones too). */
export function runStateOf(run: Run, extraWarnings: RunWarning[] = []): Record<string, NodeRunState> {
  const runState: Record<string, NodeRunState> = {};
  for (const step of run.steps ?? []) {
    runState[step.node] = { status: step.status, error: step.error || undefined, warnings: [], durationMs: step.duration_ms };
  }
  for (const step of run.steps ?? []) {
    for (const call of (step.rounds ?? []).flatMap((round) => round.tool_calls)) {
      if (call.tool_node) runState[call.tool_node] = afterCall(runState[call.tool_node], { error: call.error, durationMs: call.duration_ms });
    }
  }
  const seen = new Set<string>();
  for (const warning of [...(run.warnings ?? []), ...extraWarnings]) {
    if (!warning.node || seen.has(`${warning.node}:${warning.message}`)) continue;
    seen.add(`${warning.node}:${warning.message}`);
    const entry = (runState[warning.node] ??= { status: 'skipped', warnings: [] });
    entry.warnings.push(warning.message);
  }
  return runState;
}

/** A tool node once one of its calls ended: failed if any call failed (its first error shown),
 * running while another call is, its duration the sum of its calls'. */
export function afterCall(current: NodeRunState | undefined, end: ToolCallEnd, callId?: string): NodeRunState {
  const calls = [...(current?.calls ?? [])];
  if (callId !== undefined && calls.includes(callId)) calls.splice(calls.indexOf(callId), 1);
  const error = current?.error || end.error || undefined;
  const durationMs = end.durationMs === undefined ? current?.durationMs : (current?.durationMs ?? 0) + end.durationMs;
  const status = calls.length ? 'running' : error ? 'failed' : 'succeeded';
  const { calls: _ended, ...rest } = current ?? { warnings: [] };
  void _ended;
  return { ...rest, status, error, durationMs, ...(calls.length ? { calls } : {}) };
}

export const createRunSlice: EditorSlice<RunSlice> = (set) => ({
  ...FRESH_RUN,

  startRun: () => set({ runState: {}, lastRunId: null }),

  showRun: (run, extraWarnings = []) => set({ runState: runStateOf(run, extraWarnings), lastRunId: run.id }),

  nodeEvent: (node, change) =>
    set((s) => {
      const current = s.runState[node] ?? { status: 'skipped' as const, warnings: [] };
      const next: NodeRunState = {
        ...current,
        status: change.status ?? current.status,
        error: change.error ?? current.error,
        durationMs: change.durationMs ?? current.durationMs,
        warnings: change.warning ? [...current.warnings, change.warning] : current.warnings,
      };
      return { runState: { ...s.runState, [node]: next } };
    }),

  toolStarted: (node, callId) =>
    set((s) => {
      const current = s.runState[node];
      const next: NodeRunState = { ...(current ?? { warnings: [] }), status: 'running', calls: [...(current?.calls ?? []), callId] };
      return { runState: { ...s.runState, [node]: next } };
    }),

  toolFinished: (node, callId, end) => set((s) => ({ runState: { ...s.runState, [node]: afterCall(s.runState[node], end, callId) } })),

  clearRun: () => set({ runState: {}, lastRunId: null }),
});
