import type { NodeTypeSpec, Provider, Run, RunStep, Template, Workflow } from '../api/types';
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
    unpublished_changes: false,
    triggers: [],
    ...overrides,
  };
}

/** A finished chat run of workflow 7 (`GET /api/runs/{id}/`). */
export function run(overrides: Partial<Run> = {}): Run {
  return {
    id: 5,
    workflow: 7,
    workflow_name: 'Support bot',
    version: 1,
    status: 'succeeded',
    trigger: 'chat',
    thread: 1,
    participant: null,
    input: 'hi',
    output: '',
    error: '',
    warnings: [],
    created: '2025-01-01T00:00:00Z',
    started: null,
    finished: null,
    duration_ms: 5,
    prompt_tokens: 0,
    completion_tokens: 0,
    cost: 0,
    steps: [],
    summarizations: [],
    extractions: [],
    ...overrides,
  };
}

/** One node's step of a run. */
export function runStep(node: string, type: string, overrides: Partial<RunStep> = {}): RunStep {
  return { node, type, status: 'succeeded', duration_ms: 1, input: '', output: '', error: '', details: {}, messages: null, rounds: null, ...overrides };
}

/** What ``promise`` rejects with, which must be a ``type`` (a test fails with what it got instead). */
export async function rejection<E extends Error>(promise: Promise<unknown>, type: abstract new (...args: never[]) => E): Promise<E> {
  const error: unknown = await promise.then(
    () => new Error('expected a rejection, but the promise resolved'),
    (reason: unknown) => reason,
  );
  if (error instanceof type) return error;
  throw error instanceof Error ? error : new Error(`rejected with ${JSON.stringify(error)}`);
}

export function provider(overrides: Partial<Provider> & Pick<Provider, 'id' | 'name' | 'kind'>): Provider {
  return { api_base: '', has_api_key: true, created: '2025-01-01T00:00:00Z', ...overrides };
}

type Handler = (init: RequestInit & { url: string; json: unknown }) => { status?: number; body?: unknown } | undefined;

/** A fetch stub: `routes` maps "METHOD /path" to a handler; every call is recorded. */
export function mockFetch(routes: Record<string, Handler>) {
  const calls: { method: string; url: string; body: unknown; headers: Record<string, string> }[] = [];
  const fetchStub = (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = (init.method ?? 'GET').toUpperCase();
    const json: unknown = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
    calls.push({ method, url, body: json, headers: (init.headers ?? {}) as Record<string, string> });
    const path = url.split('?')[0];
    const handler = routes[`${method} ${path}`];
    const answer = handler ? handler({ ...init, url, json }) : { status: 404, body: { detail: 'Not found.' } };
    const status = answer?.status ?? 200;
    const body = answer?.body === undefined ? '' : JSON.stringify(answer.body);
    return Promise.resolve(new Response(status === 204 ? null : body, { status, headers: { 'Content-Type': 'application/json' } }));
  };
  return { fetch: fetchStub, calls };
}
