import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { edgeId } from '../editor/store';
import { mockFetch, templates } from '../test/fixtures';
import { WorkflowsPage } from './WorkflowsPage';

function server() {
  return mockFetch({
    'GET /api/workflows/': () => ({ body: { count: 0, next: null, previous: null, results: [] } }),
    'GET /api/templates/': () => ({ body: templates }),
    'POST /api/workflows/': ({ json }) => ({ status: 201, body: { id: 41, ...(json as object) } }),
  });
}

beforeEach(() => {
  document.cookie = 'csrftoken=tok';
  window.history.replaceState(null, '', '/');
});
afterEach(() => vi.unstubAllGlobals());

describe('the workflow list', () => {
  it('shows the templates the server serves', async () => {
    vi.stubGlobal('fetch', server().fetch);
    render(<WorkflowsPage />);
    await waitFor(() => expect(document.querySelectorAll('.template-card')).toHaveLength(templates.length));
    expect([...document.querySelectorAll('.template-card strong')].map((s) => s.textContent)).toEqual(templates.map((t) => t.name));
  });

  it('creates a workflow from a template as served: on the default model already, nothing else asked', async () => {
    const backend = server();
    vi.stubGlobal('fetch', backend.fetch);
    render(<WorkflowsPage />);
    const router = templates.find((t) => t.key === 'router')!;
    fireEvent.click(await screen.findByRole('button', { name: new RegExp(`^${router.name}`) }));
    await waitFor(() => expect(window.location.pathname).toBe('/workflows/41'));
    const posts = backend.calls.filter((c) => c.method === 'POST');
    expect(posts).toEqual([expect.objectContaining({ url: '/api/workflows/', body: { name: router.name, graph: router.graph } })]);
    expect(backend.calls.map((c) => c.url)).not.toContain('/api/providers/default/');
  });

  it('starts an empty canvas from "New workflow" and the blank template alike', async () => {
    const backend = server();
    vi.stubGlobal('fetch', backend.fetch);
    render(<WorkflowsPage />);
    fireEvent.click(screen.getByRole('button', { name: 'New workflow' }));
    await waitFor(() => expect(window.location.pathname).toBe('/workflows/41'));
    fireEvent.click(await screen.findByRole('button', { name: /^Blank workflow/ }));
    await waitFor(() => expect(backend.calls.filter((c) => c.method === 'POST')).toHaveLength(2));
    const empty = { name: 'Untitled workflow', graph: { nodes: [], edges: [] } };
    expect(backend.calls.filter((c) => c.method === 'POST').map((c) => c.body)).toEqual([empty, empty]);
  });

  it("gets templates whose edge ids are the editor's own (one edge-id format, server and editor)", () => {
    const edges = templates.flatMap((t) => t.graph.edges);
    expect(edges).not.toHaveLength(0);
    for (const edge of edges) expect(edge.id).toBe(edgeId(edge));
  });
});
