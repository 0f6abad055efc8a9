// Undo and redo: snapshots of the nodes and edges before each content change. Keystrokes in one
// field within COALESCE_MS are one step; a drag is one step from where it began.
import { snapshot, type Snapshot } from './flow';
import type { EditorSlice, EditorState, GetEditor, SetEditor } from './types';

const HISTORY_LIMIT = 100;
/** Keystrokes in one field within this window are one undo step. */
const COALESCE_MS = 1200;

export interface HistorySlice {
  past: Snapshot[];
  future: Snapshot[];
  /** Bookkeeping the canvas never draws: the field edit an undo step may extend, the nodes as a
   * drag began. */
  lastEdit: { key: string; at: number } | null;
  dragStart: Snapshot | null;
  undo: () => void;
  redo: () => void;
}

/** A workflow's history as it opens: nothing to undo. */
export const FRESH_HISTORY = { past: [], future: [], lastEdit: null, dragStart: null } satisfies Partial<HistorySlice>;

/**
 * Applies a content change as one undo step (and one more edit to save). `coalesceKey` names a
 * field: changes to it in quick succession extend the step before; `before` is the state the step
 * goes back to when it is not the current one (a drag's start).
 */
export function commit(set: SetEditor, get: GetEditor, next: Partial<EditorState>, options: { coalesceKey?: string; before?: Snapshot } = {}) {
  const state = get();
  const now = Date.now();
  const { lastEdit } = state;
  const coalesce = options.coalesceKey && lastEdit?.key === options.coalesceKey && now - lastEdit.at < COALESCE_MS;
  set({
    ...next,
    lastEdit: options.coalesceKey ? { key: options.coalesceKey, at: now } : null,
    past: coalesce ? state.past : [...state.past, options.before ?? snapshot(state)].slice(-HISTORY_LIMIT),
    future: [],
    changeCount: state.changeCount + 1,
  });
}

export const createHistorySlice: EditorSlice<HistorySlice> = (set, get) => ({
  ...FRESH_HISTORY,

  undo: () => {
    const state = get();
    const previous = state.past[state.past.length - 1];
    if (!previous) return;
    set({
      ...previous,
      lastEdit: null,
      past: state.past.slice(0, -1),
      future: [snapshot(state), ...state.future],
      changeCount: state.changeCount + 1,
    });
  },

  redo: () => {
    const state = get();
    const next = state.future[0];
    if (!next) return;
    set({
      ...next,
      lastEdit: null,
      past: [...state.past, snapshot(state)],
      future: state.future.slice(1),
      changeCount: state.changeCount + 1,
    });
  },
});
