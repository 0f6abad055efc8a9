import type { NodeTypeSpec, Template, Workflow } from '../api/types';
import raw from './nodeTypes.fixture.json';
import rawTemplates from './templates.fixture.json';

/** `GET /api/node-types/` as the backend's registry serves it (dumped from workflows.engine). */
export const nodeTypes = raw as unknown as NodeTypeSpec[];

/** `GET /api/templates/` as served where the default model is smollm2 on provider 5 (the sample
 * library, workflows/samples.py; tests/test_samples.py fails when this file falls behind it). */
export const templates = rawTemplates as Template[];
export const templatesModel = { provider: 5, model: 'smollm2' };

export function spec(type: string): NodeTypeSpec {
  const found = nodeTypes.find((t) => t.type === type);
  if (!found) throw new Error(`no node type ${type} in the fixture`);
  return found;
}

export function workflow(overrides: Partial<Workflow> = {}): Workflow {
  return {
    id: 7,
    name: 'Support bot',
    graph: { nodes: [], edges: [] },
    revision: 3,
    errors: [],
    published_version: null,
    created: '2025-01-01T00:00:00Z',
    updated: '2025-01-01T00:00:00Z',
    ...overrides,
  };
}

type Handler = (init: RequestInit & { url: string; json: unknown }) => { status?: number; body?: unknown } | undefined;

/** A fetch stub: `routes` maps "METHOD /path" to a handler; every call is recorded. */
export function mockFetch(routes: Record<string, Handler>) {
  const calls: { method: string; url: string; body: unknown; headers: Record<string, string> }[] = [];
  const fetchStub = async (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = typeof input === 'string' ? input : input.toString();
    const method = (init.method ?? 'GET').toUpperCase();
    const json = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
    calls.push({ method, url, body: json, headers: (init.headers ?? {}) as Record<string, string> });
    const path = url.split('?')[0];
    const handler = routes[`${method} ${path}`];
    const answer = handler ? handler({ ...init, url, json }) : { status: 404, body: { detail: 'Not found.' } };
    const status = answer?.status ?? 200;
    const body = answer?.body === undefined ? '' : JSON.stringify(answer.body);
    return new Response(status === 204 ? null : body, { status, headers: { 'Content-Type': 'application/json' } });
  };
  return { fetch: fetchStub as typeof fetch, calls };
}
