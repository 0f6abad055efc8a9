// Versions, workflow files, threads and spend limits (DESIGN.md §10 and issue 19).
import { request } from './client';
import type { Graph, Page, ValidationIssue, Workflow } from './types';

export interface Version {
  version: number;
  created: string;
  graph: Graph;
  published_by: string | null;
  live: boolean;
}

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

export interface DiffEdge {
  id: string;
  source: string;
  sourceHandle: string | null;
  target: string;
  targetHandle: string | null;
}

export interface Thread {
  id: number;
  workflow: number;
  workflow_name: string;
  title: string;
  key: string | null;
  source: 'widget' | 'api' | 'chat';
  message_count: number;
  participant?: number | null;
  created: string;
  updated: string;
}

export interface Limit {
  tokens: number | null;
  cost: number | null;
}

export type LimitScope = 'workflow' | 'visitor' | 'caller';

export interface Limits extends Record<LimitScope, Limit> {
  today: { tokens: number; cost: number; runs: number; refused: number };
  day_started: string;
}

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
  importFile: (text: string, name?: string): Promise<Workflow & { errors: ValidationIssue[] }> => {
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
  updateLimits: (workflowId: number, body: Partial<Record<LimitScope, Limit | null>>) =>
    request<Limits>('PATCH', `/api/workflows/${workflowId}/limits/`, body),
};

