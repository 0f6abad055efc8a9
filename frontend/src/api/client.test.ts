import { afterEach, describe, expect, it, vi } from 'vitest';
import { mockFetch, rejection } from '../test/fixtures';
import { api, ApiError, ConflictError, onUnauthorized, request } from './client';

afterEach(() => {
  vi.unstubAllGlobals();
  document.cookie = 'csrftoken=; expires=Thu, 01 Jan 1970 00:00:00 GMT';
});

describe('request', () => {
  it('turns a 409 into a ConflictError carrying the current revision', async () => {
    vi.stubGlobal('fetch', mockFetch({ 'PUT /api/workflows/3/': () => ({ status: 409, body: { detail: 'stale revision', revision: 8 } }) }).fetch);
    const error = await rejection(api.saveWorkflow(3, { graph: { nodes: [], edges: [] }, revision: 7 }), ConflictError);
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(409);
    expect(error.revision).toBe(8);
  });

  it('uses PATCH when only the name changes and always sends the revision', async () => {
    const server = mockFetch({ 'PATCH /api/workflows/3/': ({ json }) => ({ body: json }) });
    vi.stubGlobal('fetch', server.fetch);
    document.cookie = 'csrftoken=tok';
    await api.saveWorkflow(3, { name: 'Renamed', revision: 2 });
    expect(server.calls[0]).toMatchObject({ method: 'PATCH', body: { name: 'Renamed', revision: 2 } });
  });

  it('fetches the CSRF cookie before the first unsafe request and sends it as X-CSRFToken', async () => {
    const server = mockFetch({
      'GET /api/auth/csrf/': () => {
        document.cookie = 'csrftoken=fresh-token';
        return { status: 204 };
      },
      'POST /api/workflows/': ({ json }) => ({ status: 201, body: { id: 1, ...(json as object) } }),
    });
    vi.stubGlobal('fetch', server.fetch);
    await api.createWorkflow({ name: 'x', graph: { nodes: [], edges: [] } });
    expect(server.calls.map((c) => `${c.method} ${c.url}`)).toEqual(['GET /api/auth/csrf/', 'POST /api/workflows/']);
    expect(server.calls[1].headers['X-CSRFToken']).toBe('fresh-token');
  });

  it('exposes validation issues of a 400 and a readable message', async () => {
    const errors = [{ node: 'llm_1', field: 'model', message: 'String should have at least 1 character' }];
    vi.stubGlobal('fetch', mockFetch({ 'POST /api/workflows/3/publish/': () => ({ status: 400, body: { errors } }) }).fetch);
    const error = await rejection(api.publish(3), ApiError);
    expect(error.issues).toEqual(errors);
    expect(error.message).toBe('String should have at least 1 character');
  });

  it('reports a lost session to listeners, but not for the auth endpoints themselves', async () => {
    const lost = vi.fn();
    const stop = onUnauthorized(lost);
    const detail = { detail: 'Authentication credentials were not provided.' };
    vi.stubGlobal('fetch', mockFetch({ 'GET /api/runs/': () => ({ status: 403, body: detail }), 'GET /api/auth/me/': () => ({ status: 401, body: detail }) }).fetch);
    await expect(api.me()).rejects.toMatchObject({ status: 401 });
    expect(lost).not.toHaveBeenCalled();
    await expect(request('GET', '/api/runs/')).rejects.toMatchObject({ status: 403 });
    expect(lost).toHaveBeenCalledTimes(1);
    stop();
  });

  it('does not show an HTML error page as the message', async () => {
    vi.stubGlobal('fetch', () => Promise.resolve(new Response('<!doctype html><h1>Server Error (500)</h1>', { status: 500 })));
    const error = await rejection(api.workflow(1), ApiError);
    expect(error.message).toMatch(/^The server failed to answer \(500\)/);
  });

  it('builds list queries without empty filters', async () => {
    const server = mockFetch({ 'GET /api/runs/': () => ({ body: { count: 0, next: null, previous: null, results: [] } }) });
    vi.stubGlobal('fetch', server.fetch);
    await api.runs({ workflow: 4, status: '', trigger: 'chat', limit: 25, offset: 0 });
    expect(server.calls[0].url).toBe('/api/runs/?workflow=4&trigger=chat&limit=25&offset=0');
  });
});
