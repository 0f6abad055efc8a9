// The editor's one store (zustand), composed of one slice per concern (./store/): the workflow
// open, the drawn graph and its change handlers with the connection rule, undo/redo, the
// clipboard, saving with the revision, the server's validation issues and the last run's
// per-node states. React Flow is controlled from here.
import { create } from 'zustand';
import { createClipboardSlice } from './store/clipboard';
import { createGraphSlice } from './store/graph';
import { createHistorySlice } from './store/history';
import { createIssuesSlice } from './store/issues';
import { createRunSlice } from './store/runState';
import { createSavingSlice } from './store/saving';
import type { EditorState } from './store/types';
import { createWorkflowSlice } from './store/workflow';

export const useEditor = create<EditorState>()((...a) => ({
  ...createWorkflowSlice(...a),
  ...createGraphSlice(...a),
  ...createHistorySlice(...a),
  ...createClipboardSlice(...a),
  ...createSavingSlice(...a),
  ...createIssuesSlice(...a),
  ...createRunSlice(...a),
}));

export type { EditorState } from './store/types';
export { edgeId, fromGraph, toGraph, uniqueNodeId, type FlowEdge, type FlowNode } from './store/flow';
export { issuesByNode, issuesOf } from './store/issues';
export type { NodeRunState } from './store/runState';
export { saveStatus, type SaveStatus } from './store/saving';
