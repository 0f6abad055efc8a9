import { act, render } from '@testing-library/react';
import { ReactFlowProvider } from '@xyflow/react';
import { beforeEach, describe, expect, it } from 'vitest';
import { nodeTypes as specs, run, runStep, workflow } from '../test/fixtures';
import { Canvas } from './Canvas';
import { registerNodeTypes, summaryOf } from './GenericNode';
import { useEditor } from './store';

const handles = (nodeId: string, kind: 'source' | 'target') =>
  [...document.querySelectorAll(`[data-testid="node-${nodeId}"] .react-flow__handle.${kind}`)].map((h) => ({
    id: h.getAttribute('data-handleid'),
    position: h.getAttribute('data-handlepos'),
    port: [...h.classList].find((c) => /^sk-handle-(flow|memory|llm)$/.test(c)),
  }));

beforeEach(() => {
  registerNodeTypes(specs.map((s) => s.type));
  useEditor.getState().setSpecs(specs);
  useEditor.getState().load(
    workflow({
      graph: {
        nodes: [
          { id: 'router_1', type: 'router.llm', position: { x: 0, y: 0 }, data: { routes: [{ name: 'billing' }, { name: 'general' }], default_route: 'general' } },
          { id: 'summary_1', type: 'memory.summary', position: { x: 0, y: 300 }, data: {} },
        ],
        edges: [],
      },
      errors: [{ node: 'summary_1', field: 'llm', message: 'llm_source is external: attach an llm.model node to the llm port' }],
    }),
  );
});

function renderCanvas() {
  return render(
    <div style={{ width: 800, height: 600 }}>
      <ReactFlowProvider>
        <Canvas />
      </ReactFlowProvider>
    </div>,
  );
}

describe('GenericNode', () => {
  it('draws flow ports left/right and resource ports top/bottom, one output per route', () => {
    renderCanvas();
    expect(handles('router_1', 'target')).toEqual([
      { id: 'input', position: 'left', port: 'sk-handle-flow' },
      { id: 'memory', position: 'bottom', port: 'sk-handle-memory' },
    ]);
    expect(handles('router_1', 'source')).toEqual([
      { id: 'billing', position: 'right', port: 'sk-handle-flow' },
      { id: 'general', position: 'right', port: 'sk-handle-flow' },
    ]);
    expect(handles('summary_1', 'source')).toEqual([
      { id: 'memory', position: 'top', port: 'sk-handle-memory' },
      { id: 'messages', position: 'right', port: 'sk-handle-flow' },
    ]);
    expect(handles('summary_1', 'target').map((h) => [h.id, h.position, h.port])).toEqual([
      ['set_history', 'left', 'sk-handle-flow'],
      ['llm', 'bottom', 'sk-handle-llm'],
    ]);
  });

  it('follows route edits', () => {
    renderCanvas();
    act(() => useEditor.getState().updateNodeData('router_1', { routes: [{ name: 'billing' }, { name: 'sales' }, { name: 'general' }] }));
    expect(handles('router_1', 'source').map((h) => h.id)).toEqual(['billing', 'sales', 'general']);
  });

  it('shows server errors on the node and marks the port at fault', () => {
    renderCanvas();
    const node = document.querySelector('[data-testid="node-summary_1"]')!;
    expect(node.getAttribute('data-invalid')).toBe('true');
    expect(node.querySelector('[data-testid="node-error"]')!.textContent).toContain('attach an llm.model node');
    expect(node.querySelector('.react-flow__handle[data-handleid="llm"]')!.classList).toContain('sk-handle-error');
    expect(document.querySelector('[data-testid="node-router_1"]')!.getAttribute('data-invalid')).toBe('false');
  });

  it('lights nodes up from a run', () => {
    renderCanvas();
    act(() =>
      useEditor.getState().showRun(
        run({
          status: 'failed',
          error: 'boom',
          duration_ms: 3,
          warnings: [{ node: 'summary_1', message: 'summarization timed out; sent the whole history' }],
          steps: [runStep('router_1', 'router.llm', { status: 'failed', duration_ms: 3, input: 'hi', error: 'model not found' })],
        }),
      ),
    );
    const router = document.querySelector('[data-testid="node-router_1"]')!;
    expect(router.getAttribute('data-run-status')).toBe('failed');
    expect(router.querySelector('[data-testid="node-run-error"]')!.textContent).toBe('model not found');
    const summary = document.querySelector('[data-testid="node-summary_1"]')!;
    expect(summary.querySelector('[data-testid="node-warning"]')!.textContent).toContain('summarization timed out');
  });
});

describe('the summary under a node title', () => {
  it('fills in the parts its node type describes, leaving out empty params', () => {
    const summary = (type: string, data: Record<string, unknown>) => summaryOf(specs.find((s) => s.type === type)!.summary, data);
    expect(summary('llm', { model: 'gpt-4o-mini' })).toBe('gpt-4o-mini');
    expect(summary('trigger.schedule', { cron: '0 9 * * *', timezone: 'Europe/Lisbon' })).toBe('0 9 * * * · Europe/Lisbon');
    expect(summary('memory.window', { history: 'global', max_messages: null })).toBe('global history');
    expect(summary('memory.summary', { history: 'named', max_messages: 20 })).toBe('named history · 20 msgs');
    expect(summary('template', { template: `Dear {{ payload.name }},\nthanks` })).toBe('Dear {{ payload.name }},');
    expect(summary('output', {})).toBeNull();
  });
});
