// The workflow open in the editor: which one, its name and published state, and what new nodes
// are made from (the node types, the installation's default model). Opening one starts every
// other slice afresh.
import type { NodeTypeSpec, Workflow } from '../../api/types';
import type { ModelChoice } from '../models';
import { FRESH_CLIPBOARD } from './clipboard';
import { fromGraph } from './flow';
import { FRESH_HISTORY } from './history';
import { FRESH_RUN } from './runState';
import { FRESH_SAVING } from './saving';
import type { EditorSlice } from './types';

export interface WorkflowSlice {
  specs: Record<string, NodeTypeSpec>;
  workflowId: number | null;
  name: string;
  publishedVersion: number | null;
  /** The saved draft differs from the published version (the server compares them). */
  unpublishedChanges: boolean;
  /** The model a dropped node starts with (the installation's default). */
  modelDefault: ModelChoice | null;
  setSpecs: (specs: NodeTypeSpec[]) => void;
  setModelDefault: (choice: ModelChoice | null) => void;
  /** Opens a workflow: its draft, with nothing to undo, nothing unsaved and no run shown. */
  load: (workflow: Workflow) => void;
  setName: (name: string) => void;
}

export const createWorkflowSlice: EditorSlice<WorkflowSlice> = (set) => ({
  specs: {},
  workflowId: null,
  name: '',
  publishedVersion: null,
  unpublishedChanges: false,
  modelDefault: null,

  setSpecs: (specs) => set({ specs: Object.fromEntries(specs.map((s) => [s.type, s])) }),

  setModelDefault: (choice) => set({ modelDefault: choice }),

  load: (workflow) =>
    set({
      ...FRESH_HISTORY,
      ...FRESH_CLIPBOARD,
      ...FRESH_SAVING,
      ...FRESH_RUN,
      workflowId: workflow.id,
      name: workflow.name,
      revision: workflow.revision,
      publishedVersion: workflow.published_version ?? null,
      unpublishedChanges: workflow.unpublished_changes ?? false,
      ...fromGraph(workflow.graph),
      issues: workflow.errors ?? [],
    }),

  setName: (name) => set((s) => ({ name, changeCount: s.changeCount + 1 })),
});
