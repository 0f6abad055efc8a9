// Saving the draft: every content edit counts, and the draft is saved (with the revision it is
// based on) until the saved count catches up. A stale revision is a conflict, never retried.
import { api, ConflictError } from '../../api/client';
import { toGraph } from './flow';
import type { EditorSlice, EditorState } from './types';

export type SaveStatus = 'saved' | 'unsaved' | 'saving' | 'error' | 'conflict';

export interface SavingSlice {
  /** The draft's revision the next save is based on. */
  revision: number;
  /** Content edits so far; the draft is saved when savedCount catches up. */
  changeCount: number;
  savedCount: number;
  saving: boolean;
  saveError: string | null;
  conflict: { revision: number | null } | null;
  /** The save on its way. */
  inflightSave: Promise<boolean> | null;
  /** Saves the draft if it changed; resolves whether it is saved. */
  save: () => Promise<boolean>;
}

export const FRESH_SAVING = {
  changeCount: 0,
  savedCount: 0,
  saving: false,
  saveError: null,
  conflict: null,
} satisfies Partial<SavingSlice>;

export const createSavingSlice: EditorSlice<SavingSlice> = (set, get) => ({
  revision: 0,
  inflightSave: null,
  ...FRESH_SAVING,

  save: async () => {
    while (get().inflightSave) await get().inflightSave;
    const state = get();
    if (state.workflowId === null || state.conflict) return false;
    if (state.changeCount === state.savedCount) return true;
    const sent = state.changeCount;
    const saving = (async () => {
      set({ saving: true });
      try {
        const saved = await api.saveWorkflow(state.workflowId!, {
          // An empty name is refused by the server: the graph is saved without it (the page says so).
          ...(state.name.trim() ? { name: state.name } : {}),
          graph: toGraph(state.nodes, state.edges),
          revision: state.revision,
        });
        set({
          revision: saved.revision,
          issues: saved.errors ?? [],
          unpublishedChanges: saved.unpublished_changes ?? false,
          savedCount: sent,
          saving: false,
          saveError: null,
        });
        return true;
      } catch (error) {
        if (error instanceof ConflictError) set({ conflict: { revision: error.revision }, saving: false });
        else set({ saveError: (error as Error).message, saving: false });
        return false;
      } finally {
        set({ inflightSave: null });
      }
    })();
    set({ inflightSave: saving });
    return saving;
  },
});

/** The save indicator's state. */
export function saveStatus(s: Pick<EditorState, 'conflict' | 'saving' | 'saveError' | 'changeCount' | 'savedCount'>): SaveStatus {
  if (s.conflict) return 'conflict';
  if (s.saving) return 'saving';
  if (s.saveError) return 'error';
  return s.changeCount === s.savedCount ? 'saved' : 'unsaved';
}
