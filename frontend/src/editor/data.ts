// What the editor needs before it can draw a workflow: the node registry, the draft and the model
// providers, read at once. The app starts reading them as soon as it knows the path, alongside the
// session check rather than after it, and the editor takes that read over when it mounts. (Django's
// page for /workflows/{id} preloads the same URLs, so the browser has them in flight even earlier:
// config/urls.py, `editor_preloads`.)
import { api } from '../api/client';
import type { ModelDefault, NodeTypeSpec, Provider, Workflow } from '../api/types';

export interface EditorData {
  specs: NodeTypeSpec[];
  workflow: Workflow;
  providers: Provider[];
  /** The model a dropped node starts with (null if the server could not say: the schema's default). */
  modelDefault: ModelDefault | null;
}

export async function fetchEditorData(workflowId: number): Promise<EditorData> {
  const [specs, workflow, providers, modelDefault] = await Promise.all([
    api.nodeTypes(),
    api.workflow(workflowId),
    api.providers().catch(() => [] as Provider[]),
    api.modelDefault().catch(() => null),
  ]);
  return { specs, workflow, providers, modelDefault };
}

let early: { workflowId: number; data: Promise<EditorData> } | null = null;

/** Starts reading a workflow for the editor before the editor mounts. */
export function prefetchEditorData(workflowId: number): void {
  const data = fetchEditorData(workflowId);
  data.catch(() => {}); // whoever takes it over retries instead
  early = { workflowId, data };
}

/** The early read of this workflow, taken over once (read again if it failed, e.g. before a login), or a fresh read. */
export function loadEditorData(workflowId: number): Promise<EditorData> {
  const started = early?.workflowId === workflowId ? early.data : null;
  early = null;
  return started ? started.catch(() => fetchEditorData(workflowId)) : fetchEditorData(workflowId);
}
