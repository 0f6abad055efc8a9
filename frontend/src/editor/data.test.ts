import { afterEach, describe, expect, it, vi } from 'vitest';
import { mockFetch, nodeTypes, workflow } from '../test/fixtures';
import { loadEditorData, prefetchEditorData } from './data';

afterEach(() => vi.unstubAllGlobals());

function server(workflowStatus = () => 200) {
  return mockFetch({
    'GET /api/node-types/': () => ({ body: nodeTypes }),
    'GET /api/workflows/7/': () => (workflowStatus() === 200 ? { body: workflow() } : { status: workflowStatus(), body: { detail: 'nope' } }),
    'GET /api/providers/': () => ({ body: [] }),
    'GET /api/providers/default/': () => ({ body: { provider: 3, model: 'smollm2', environment_models: [] } }),
  });
}

describe('the editor data', () => {
  it('is read once when the app started reading it early, and only by the first editor', async () => {
    const backend = server();
    vi.stubGlobal('fetch', backend.fetch);
    prefetchEditorData(7);
    expect(backend.calls.map((c) => c.url).sort()).toEqual(['/api/node-types/', '/api/providers/', '/api/providers/default/', '/api/workflows/7/']);
    const data = await loadEditorData(7);
    expect(data.workflow.id).toBe(7);
    expect(data.specs).toHaveLength(nodeTypes.length);
    expect(data.modelDefault).toMatchObject({ provider: 3, model: 'smollm2' });
    expect(backend.calls).toHaveLength(4);
    await loadEditorData(7); // a later editor (e.g. after "Reload latest") reads afresh
    expect(backend.calls).toHaveLength(8);
  });

  it('is read again when the early read failed (say, before logging in)', async () => {
    let status = 403;
    const backend = server(() => status);
    vi.stubGlobal('fetch', backend.fetch);
    prefetchEditorData(7);
    status = 200;
    const data = await loadEditorData(7);
    expect(data.workflow.id).toBe(7);
    expect(backend.calls.filter((c) => c.url === '/api/workflows/7/')).toHaveLength(2);
  });

  it('is not taken from an early read of another workflow', async () => {
    const backend = server();
    vi.stubGlobal('fetch', backend.fetch);
    prefetchEditorData(8);
    await expect(loadEditorData(7)).resolves.toMatchObject({ workflow: { id: 7 } });
  });
});
