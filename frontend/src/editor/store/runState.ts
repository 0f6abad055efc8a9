// The last run's state per node, as the canvas shows it: from a finished run (its steps and
// warnings), or live from the test chat's events while a turn runs.
import type { Run, RunWarning } from '../../api/types';
import type { EditorSlice } from './types';

export interface NodeRunState {
  status: 'running' | 'succeeded' | 'failed' | 'skipped';
  error?: string;
  warnings: string[];
  durationMs?: number | null;
}

export interface RunSlice {
  runState: Record<string, NodeRunState>;
  lastRunId: number | null;
  startRun: () => void;
  showRun: (run: Run, extraWarnings?: RunWarning[]) => void;
  /** A live event of the running turn: a node started or finished, or a memory warned. */
  nodeEvent: (node: string, change: { status?: NodeRunState['status']; error?: string; durationMs?: number; warning?: string }) => void;
  clearRun: () => void;
}

export const FRESH_RUN = { runState: {}, lastRunId: null } satisfies Partial<RunSlice>;

/** Each node's state in a finished run: its step, and its warnings (each once; extra ones too). */
export function runStateOf(run: Run, extraWarnings: RunWarning[] = []): Record<string, NodeRunState> {
  const runState: Record<string, NodeRunState> = {};
  for (const step of run.steps ?? []) {
    runState[step.node] = { status: step.status, error: step.error || undefined, warnings: [], durationMs: step.duration_ms };
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

  clearRun: () => set({ runState: {}, lastRunId: null }),
});
