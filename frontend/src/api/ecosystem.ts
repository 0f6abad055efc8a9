// Versions, workflow files, threads and spend limits (docs/ecosystem.md#skein-in-its-ecosystem and issue 19).
import { request } from './client';
import type { Graph, GraphEdge, Page, Refine, Schemas, Workflow } from './types';

export type Version = Refine<Schemas['VersionOutput'], { graph: Graph }>;

// A diff of two graphs (`GET .../versions/diff/`): "an object" in the schema.
export interface NodeChange {
  id: string;
  type: string | null;
  type_from?: string | null;
  params: Record<string, { from: unknown; to: unknown }>;
}

export interface GraphDiff {
  from: string;
  to: string;
  nodes: { added: { id: string; type: string | null }[]; removed: { id: string; type: string | null }[]; changed: NodeChange[]; moved: string[] };
  edges: { added: DiffEdge[]; removed: DiffEdge[] };
}

/** An edge added or removed: as the graph stores it. */
export type DiffEdge = GraphEdge;

/** A thread; `source`: widget, api (a key of the caller's) or chat. */
export type Thread = Schemas['ThreadOutput'];

/** A daily spend limit; no tokens or cost: none. */
export type Limit = Schemas['Limit'];

/** Whose use a limit counts: the whole workflow's, each widget visitor's, each API caller's. */
export type LimitScope = keyof Schemas['PatchedLimitsInputRequest'];

export type Limits = Schemas['LimitsOutput'];

export function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(key, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

export const ecosystem = {
  versions: (workflowId: number) => request<Version[]>('GET', `/api/workflows/${workflowId}/versions/`),
  diff: (workflowId: number, from: string | number, to: string | number = 'draft') =>
    request<GraphDiff>('GET', `/api/workflows/${workflowId}/versions/diff/${query({ from: String(from), to: String(to) })}`),
  restore: (workflowId: number, version: number, revision?: number) =>
    request<Workflow>('POST', `/api/workflows/${workflowId}/versions/${version}/restore/`, revision ? { revision } : {}),

  exportFile: (workflowId: number) => request<Record<string, unknown>>('GET', `/api/workflows/${workflowId}/export/`),
  /** A file's content: the server says what is wrong with it (400) or what it could not map (`errors`). */
  importFile: (text: string, name?: string): Promise<Workflow> => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return Promise.reject(new Error('This file is not JSON. Choose a workflow file exported from Skein (.skein.json).'));
    }
    return request<Workflow>('POST', `/api/workflows/import/${query({ name })}`, parsed);
  },

  threads: (params: { workflow?: number; search?: string; limit?: number; offset?: number }) =>
    request<Page<Thread>>('GET', `/api/threads/${query(params)}`),
  thread: (id: number) => request<Thread>('GET', `/api/threads/${id}/`),
  renameThread: (id: number, title: string) => request<Thread>('PATCH', `/api/threads/${id}/`, { title }),
  deleteThread: (id: number) => request<void>('DELETE', `/api/threads/${id}/`),

  limits: (workflowId: number) => request<Limits>('GET', `/api/workflows/${workflowId}/limits/`),
  updateLimits: (workflowId: number, body: Schemas['PatchedLimitsInputRequest']) =>
    request<Limits>('PATCH', `/api/workflows/${workflowId}/limits/`, body),
};

