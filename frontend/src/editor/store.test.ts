import type { Graph } from '../api/types';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { mockFetch, nodeTypes, run, runStep, workflow } from '../test/fixtures';
import { checkConnection, outputPorts } from './ports';
import { issuesOf, toGraph, useEditor } from './store';

const s = () => useEditor.getState();

function loadGraph(graph: Graph = { nodes: [], edges: [] }) {
  s().setSpecs(nodeTypes);
  s().load(workflow({ graph }));
}

function connect(source: string, sourceHandle: string, target: string, targetHandle: string) {
  s().onConnect({ source, sourceHandle, target, targetHandle });
}

beforeEach(() => loadGraph());
afterEach(() => vi.unstubAllGlobals());

describe('adding and connecting nodes', () => {
  it('adds nodes with schema defaults, readable unique ids and selects the new one', () => {
    const a = s().addNode('llm', { x: 0, y: 0 });
    const b = s().addNode('llm', { x: 10, y: 0 });
    expect([a, b]).toEqual(['llm_1', 'llm_2']);
    expect(s().nodes.find((n) => n.id === 'llm_2')).toMatchObject({ selected: true, data: { model: 'gpt-4o-mini', temperature: 0.7 } });
    expect(s().nodes.find((n) => n.id === 'llm_1')!.selected).toBe(false);
    expect(s().addNode('no.such.type', { x: 0, y: 0 })).toBeNull();
  });

  it('allows flow→flow, memory→memory and llm→llm only', () => {
    s().addNode('trigger.chat', { x: 0, y: 0 });
    s().addNode('llm', { x: 0, y: 0 });
    s().addNode('memory.summary', { x: 0, y: 0 });
    s().addNode('llm.model', { x: 0, y: 0 });
    s().addNode('output', { x: 0, y: 0 });
    const ok = (source: string, sourceHandle: string, target: string, targetHandle: string) =>
      s().isValidConnection({ source, sourceHandle, target, targetHandle });

    expect(ok('chat_1', 'output', 'llm_1', 'input')).toBe(true);
    expect(ok('summary_1', 'memory', 'llm_1', 'memory')).toBe(true);
    expect(ok('model_1', 'llm', 'summary_1', 'llm')).toBe(true);
    expect(ok('chat_1', 'output', 'llm_1', 'memory')).toBe(false);
    expect(ok('summary_1', 'memory', 'llm_1', 'input')).toBe(false);
    expect(ok('model_1', 'llm', 'llm_1', 'memory')).toBe(false);
    expect(ok('summary_1', 'messages', 'output_1', 'input')).toBe(true);
    expect(ok('llm_1', 'output', 'llm_1', 'input')).toBe(false);
    expect(ok('llm_1', 'nope', 'output_1', 'input')).toBe(false);
  });

  it('attaches tools only to an LLM’s tools port, as many as it needs', () => {
    s().addNode('trigger.chat', { x: 0, y: 0 });
    s().addNode('llm', { x: 0, y: 0 });
    s().addNode('tool.http', { x: 0, y: 0 });
    s().addNode('tool.mcp', { x: 0, y: 0 });
    s().addNode('memory.buffer', { x: 0, y: 0 });
    const verdict = (source: string, sourceHandle: string, target: string, targetHandle: string) =>
      checkConnection({ source, sourceHandle, target, targetHandle }, { nodeType: (id) => s().specs[s().nodes.find((n) => n.id === id)?.type ?? ''], nodeData: () => ({}), edges: s().edges });

    expect(s().isValidConnection({ source: 'http_1', sourceHandle: 'tool', target: 'llm_1', targetHandle: 'tools' })).toBe(true);
    connect('http_1', 'tool', 'llm_1', 'tools');
    connect('mcp_1', 'tool', 'llm_1', 'tools');
    expect(s().edges.map((e) => `${e.source}->${e.target}.${e.targetHandle}`)).toEqual(['http_1->llm_1.tools', 'mcp_1->llm_1.tools']);
    expect(verdict('http_1', 'tool', 'llm_1', 'memory')).toEqual({ ok: false, reason: "a tool attaches to an LLM's tools port" });
    expect(verdict('http_1', 'tool', 'llm_1', 'input')).toEqual({ ok: false, reason: "a tool attaches to an LLM's tools port" });
    expect(verdict('buffer_1', 'memory', 'llm_1', 'tools')).toEqual({ ok: false, reason: 'cannot connect a memory output to a tool input' });
    expect(verdict('chat_1', 'output', 'llm_1', 'tools')).toMatchObject({ ok: false });
    expect(verdict('http_1', 'tool', 'llm_1', 'tools')).toEqual({ ok: false, reason: 'already connected' });
  });

  it('connects through onConnect with the port names as handle ids, once', () => {
    s().addNode('trigger.chat', { x: 0, y: 0 });
    s().addNode('llm', { x: 0, y: 0 });
    connect('chat_1', 'output', 'llm_1', 'input');
    connect('chat_1', 'output', 'llm_1', 'input');
    connect('chat_1', 'output', 'llm_1', 'memory');
    expect(toGraph(s().nodes, s().edges).edges).toEqual([
      { id: 'e_chat_1.output-llm_1.input', source: 'chat_1', sourceHandle: 'output', target: 'llm_1', targetHandle: 'input' },
    ]);
  });

  it('lets one memory attach to a memory port and refuses flow cycles', () => {
    s().addNode('llm', { x: 0, y: 0 });
    s().addNode('memory.buffer', { x: 0, y: 0 });
    s().addNode('memory.window', { x: 0, y: 0 });
    s().addNode('template', { x: 0, y: 0 });
    connect('buffer_1', 'memory', 'llm_1', 'memory');
    expect(s().isValidConnection({ source: 'window_1', sourceHandle: 'memory', target: 'llm_1', targetHandle: 'memory' })).toBe(false);
    connect('llm_1', 'output', 'template_1', 'input');
    expect(s().isValidConnection({ source: 'template_1', sourceHandle: 'output', target: 'llm_1', targetHandle: 'input' })).toBe(false);
  });
});

describe('router handles follow routes', () => {
  beforeEach(() => {
    s().addNode('router.static', { x: 0, y: 0 });
    s().addNode('output', { x: 0, y: 0 });
    s().addNode('template', { x: 0, y: 0 });
  });
  const router = () => s().nodes.find((n) => n.id === 'static_1')!;
  const ports = () => outputPorts(s().specs['router.static'], router().data).map((p) => p.name);

  it('draws one output per route', () => {
    expect(ports()).toEqual(['default']);
    s().updateNodeData('static_1', { routes: [{ name: 'default', match: '' }, { name: 'billing', match: 'invoice' }] });
    expect(ports()).toEqual(['default', 'billing']);
    expect(s().isValidConnection({ source: 'static_1', sourceHandle: 'billing', target: 'output_1', targetHandle: 'input' })).toBe(true);
  });

  it('gives the same ports back while the routes are the same list', () => {
    const before = outputPorts(s().specs['router.static'], router().data);
    s().onNodesChange([{ type: 'position', id: 'static_1', position: { x: 40, y: 40 }, dragging: true }]);
    expect(outputPorts(s().specs['router.static'], router().data)).toBe(before);
    s().updateNodeData('static_1', { routes: [{ name: 'default', match: '' }, { name: 'billing', match: 'invoice' }] });
    expect(outputPorts(s().specs['router.static'], router().data)).not.toBe(before);
  });

  it('keeps edges on a renamed route and drops edges of a removed one', () => {
    s().updateNodeData('static_1', { routes: [{ name: 'default', match: '' }, { name: 'billing', match: 'invoice' }] });
    connect('static_1', 'billing', 'output_1', 'input');
    connect('static_1', 'default', 'template_1', 'input');
    s().updateNodeData('static_1', { routes: [{ name: 'default', match: '' }, { name: 'invoices', match: 'invoice' }] });
    expect(s().edges.map((e) => `${e.sourceHandle}->${e.target}`).sort()).toEqual(['default->template_1', 'invoices->output_1']);
    expect(s().edges.find((e) => e.target === 'output_1')!.id).toBe('e_static_1.invoices-output_1.input');
    s().updateNodeData('static_1', { routes: [{ name: 'invoices', match: 'invoice' }], default_route: 'invoices' });
    expect(s().edges.map((e) => e.sourceHandle)).toEqual(['invoices']);
  });
});

describe('undo and redo', () => {
  it('undoes and redoes structural edits step by step', () => {
    s().addNode('trigger.chat', { x: 0, y: 0 });
    s().addNode('output', { x: 0, y: 0 });
    connect('chat_1', 'output', 'output_1', 'input');
    expect(s().edges).toHaveLength(1);
    s().undo();
    expect(s().edges).toHaveLength(0);
    expect(s().nodes).toHaveLength(2);
    s().undo();
    expect(s().nodes.map((n) => n.id)).toEqual(['chat_1']);
    s().redo();
    s().redo();
    expect(s().nodes).toHaveLength(2);
    expect(s().edges).toHaveLength(1);
    s().redo();
    expect(s().edges).toHaveLength(1);
  });

  it('a new edit clears the redo stack', () => {
    s().addNode('llm', { x: 0, y: 0 });
    s().undo();
    s().addNode('output', { x: 0, y: 0 });
    s().redo();
    expect(s().nodes.map((n) => n.id)).toEqual(['output_1']);
  });

  it('coalesces typing in one field into one step', () => {
    s().addNode('llm', { x: 0, y: 0 });
    for (const model of ['g', 'gp', 'gpt']) s().updateNodeData('llm_1', { model });
    s().updateNodeData('llm_1', { temperature: 0.1 });
    s().undo();
    expect(s().nodes[0].data).toMatchObject({ model: 'gpt', temperature: 0.7 });
    s().undo();
    expect(s().nodes[0].data.model).toBe('gpt-4o-mini');
  });

  it('records a whole drag as one step, and selection not at all', () => {
    s().addNode('llm', { x: 0, y: 0 });
    const steps = s().past.length;
    s().onNodesChange([{ type: 'select', id: 'llm_1', selected: false }]);
    s().onNodesChange([{ type: 'position', id: 'llm_1', position: { x: 5, y: 5 }, dragging: true }]);
    s().onNodesChange([{ type: 'position', id: 'llm_1', position: { x: 50, y: 60 }, dragging: true }]);
    s().onNodesChange([{ type: 'position', id: 'llm_1', position: { x: 50, y: 60 }, dragging: false }]);
    expect(s().past.length).toBe(steps + 1);
    s().undo();
    expect(s().nodes[0].position).toEqual({ x: 0, y: 0 });
  });
});

describe('delete, copy and paste', () => {
  it('deletes the selection with its edges and pastes copies with new ids and edges', () => {
    s().addNode('trigger.chat', { x: 0, y: 0 });
    s().addNode('llm', { x: 100, y: 0 });
    s().addNode('output', { x: 200, y: 0 });
    connect('chat_1', 'output', 'llm_1', 'input');
    connect('llm_1', 'output', 'output_1', 'input');
    s().selectOnly(['chat_1', 'llm_1']);
    expect(s().copySelection()).toBe(2);
    expect(s().paste()).toBe(2);
    expect(s().nodes.filter((n) => n.selected).map((n) => n.id)).toEqual(['chat_2', 'llm_2']);
    expect(s().nodes.find((n) => n.id === 'llm_2')!.position).toEqual({ x: 140, y: 40 });
    expect(s().edges.map((e) => e.id)).toContain('e_chat_2.output-llm_2.input');
    expect(s().edges).toHaveLength(3);

    s().selectOnly(['llm_1']);
    s().deleteSelected();
    expect(s().nodes.map((n) => n.id)).toEqual(['chat_1', 'output_1', 'chat_2', 'llm_2']);
    expect(s().edges.map((e) => e.id)).toEqual(['e_chat_2.output-llm_2.input']);
    s().undo();
    expect(s().edges).toHaveLength(3);
  });
});

describe('saving', () => {
  it('PUTs the graph with the revision and takes the new revision and issues', async () => {
    const issues = [{ node: 'llm_1', field: 'model', message: 'String should have at least 1 character' }];
    const server = mockFetch({ 'PUT /api/workflows/7/': ({ json }) => ({ body: { ...workflow(), ...(json as object), revision: 4, errors: issues } }) });
    vi.stubGlobal('fetch', server.fetch);
    document.cookie = 'csrftoken=tok123';
    s().addNode('llm', { x: 1.4, y: 2.6 });
    expect(await s().save()).toBe(true);
    expect(server.calls[0].method).toBe('PUT');
    expect(server.calls[0].headers['X-CSRFToken']).toBe('tok123');
    expect(server.calls[0].body).toEqual({
      name: 'Support bot',
      revision: 3,
      graph: { nodes: [{ id: 'llm_1', type: 'llm', position: { x: 1, y: 3 }, data: s().nodes[0].data }], edges: [] },
    });
    expect(s()).toMatchObject({ revision: 4, issues, changeCount: 1, savedCount: 1 });
    expect(await s().save()).toBe(true);
    expect(server.calls).toHaveLength(1);
  });

  it('on 409 shows a conflict and never overwrites or retries', async () => {
    const server = mockFetch({ 'PUT /api/workflows/7/': () => ({ status: 409, body: { detail: 'stale revision', revision: 9 } }) });
    vi.stubGlobal('fetch', server.fetch);
    s().addNode('llm', { x: 0, y: 0 });
    expect(await s().save()).toBe(false);
    expect(s().conflict).toEqual({ revision: 9 });
    expect(s().revision).toBe(3);
    s().addNode('output', { x: 0, y: 0 });
    expect(await s().save()).toBe(false);
    expect(server.calls).toHaveLength(1);
  });

  it('sends one request at a time so the second carries the first one\'s revision', async () => {
    let revision = 3;
    const server = mockFetch({
      'PUT /api/workflows/7/': ({ json }) => {
        const sent = (json as { revision: number }).revision;
        if (sent !== revision) return { status: 409, body: { detail: 'stale', revision } };
        revision += 1;
        return { body: { ...workflow(), revision } };
      },
    });
    vi.stubGlobal('fetch', server.fetch);
    s().addNode('llm', { x: 0, y: 0 });
    const first = s().save();
    s().addNode('output', { x: 0, y: 0 });
    const second = s().save();
    expect(await Promise.all([first, second])).toEqual([true, true]);
    expect(server.calls.map((c) => (c.body as { revision: number }).revision)).toEqual([3, 4]);
    expect(s().conflict).toBeNull();
    expect(s().revision).toBe(5);
  });
});

describe('run view', () => {
  it('maps steps and node warnings to node states', () => {
    s().showRun(
      run({
        id: 12,
        output: 'hi',
        warnings: [{ node: 'summary_1', message: 'summarization timed out' }, { node: null, message: 'graph level' }],
        steps: [runStep('chat_1', 'trigger.chat'), runStep('llm_1', 'llm', { status: 'failed', duration_ms: 3, error: 'model not found' })],
      }),
      [{ node: 'summary_1', message: 'summarization timed out' }],
    );
    expect(s().runState).toEqual({
      chat_1: { status: 'succeeded', error: undefined, warnings: [], durationMs: 1 },
      llm_1: { status: 'failed', error: 'model not found', warnings: [], durationMs: 3 },
      summary_1: { status: 'skipped', warnings: ['summarization timed out'] },
    });
    expect(s().lastRunId).toBe(12);
  });
});

describe('issues by node', () => {
  it('gives each node the same list for as long as the issues are the same', () => {
    const issues = [
      { node: 'llm_1', field: 'model', message: 'required' },
      { node: 'llm_1', field: null, message: 'not connected' },
      { node: null, field: null, message: 'no trigger' },
    ];
    s().setIssues(issues);
    const first = issuesOf(s().issues, 'llm_1');
    expect(first.map((i) => i.message)).toEqual(['required', 'not connected']);
    expect(issuesOf(s().issues, 'llm_1')).toBe(first);
    expect(issuesOf(s().issues, 'output_1')).toEqual([]);
    expect(issuesOf(s().issues, 'output_1')).toBe(issuesOf(s().issues, 'template_1'));
    s().setIssues([...issues]);
    expect(issuesOf(s().issues, 'llm_1')).not.toBe(first);
  });
});

describe('a first hour that works', () => {
  afterEach(() => s().setModelDefault(null));

  it('gives a dropped node that calls a model the installation default model', () => {
    s().setModelDefault({ provider: 3, model: 'smollm2' });
    s().addNode('llm', { x: 0, y: 0 });
    s().addNode('router.llm', { x: 0, y: 0 });
    s().addNode('llm.model', { x: 0, y: 0 });
    s().addNode('output', { x: 0, y: 0 });
    const data = Object.fromEntries(s().nodes.map((n) => [n.id, n.data]));
    for (const id of ['llm_1', 'llm_2', 'model_1']) expect(data[id]).toMatchObject({ model: 'smollm2', provider: 3 });
    expect(data.llm_1).toMatchObject({ temperature: 0.7 }); // the other defaults stay
    expect(data.output_1).toEqual({});
  });

  it('forgets a node\'s last run when the node is edited, and only that node\'s', () => {
    s().addNode('llm', { x: 0, y: 0 });
    s().addNode('output', { x: 0, y: 0 });
    s().nodeEvent('llm_1', { status: 'failed', error: 'model exploded' });
    s().nodeEvent('output_1', { status: 'succeeded' });
    s().updateNodeData('llm_1', { system_prompt: 'Be kind.' });
    expect(s().runState.llm_1).toBeUndefined();
    expect(s().runState.output_1).toMatchObject({ status: 'succeeded' });
  });

  it('saves the graph without an empty name, and takes whether the draft differs from what is published', async () => {
    const server = mockFetch({ 'PUT /api/workflows/7/': ({ json }) => ({ body: { ...workflow(), ...(json as object), revision: 4, unpublished_changes: true } }) });
    vi.stubGlobal('fetch', server.fetch);
    s().load(workflow({ published_version: 2, unpublished_changes: false }));
    s().setName('  ');
    s().addNode('llm', { x: 0, y: 0 });
    expect(await s().save()).toBe(true);
    expect(server.calls[0].body).not.toHaveProperty('name');
    expect(server.calls[0].body).toHaveProperty('graph');
    expect(s().unpublishedChanges).toBe(true);
  });
});
