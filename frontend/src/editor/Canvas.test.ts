import { beforeEach, describe, expect, it } from 'vitest';
import { nodeTypes, run, runStep, workflow } from '../test/fixtures';
import { decorateEdges } from './Canvas';
import { useEditor } from './store';

const s = () => useEditor.getState();
const ranChatAndLlm = run({ id: 1, steps: [runStep('chat', 'trigger.chat'), runStep('llm', 'llm')] });

beforeEach(() => {
  s().setSpecs(nodeTypes);
  s().load(
    workflow({
      graph: {
        nodes: [
          { id: 'chat', type: 'trigger.chat', position: { x: 0, y: 0 }, data: {} },
          { id: 'llm', type: 'llm', position: { x: 300, y: 0 }, data: {} },
          { id: 'mem', type: 'memory.buffer', position: { x: 300, y: 200 }, data: {} },
        ],
        edges: [
          { id: 'e1', source: 'chat', sourceHandle: 'output', target: 'llm', targetHandle: 'input' },
          { id: 'e2', source: 'mem', sourceHandle: 'memory', target: 'llm', targetHandle: 'memory' },
        ],
      },
    }),
  );
});

describe('decorateEdges', () => {
  it('draws edges by kind and lights up those a run went along', () => {
    expect(decorateEdges(s()).map((e) => e.className)).toEqual(['sk-edge sk-edge-flow', 'sk-edge sk-edge-memory']);
    s().showRun(ranChatAndLlm);
    expect(decorateEdges(s())[0]).toMatchObject({ className: 'sk-edge sk-edge-flow sk-edge-ran', animated: true });
  });

  it('hands back the same list while nodes only move, so React Flow does not re-index the edges', () => {
    const before = decorateEdges(s());
    s().onNodesChange([{ type: 'position', id: 'llm', position: { x: 320, y: 10 }, dragging: true }]);
    expect(decorateEdges(s())).toBe(before);
    s().showRun(ranChatAndLlm);
    const lit = decorateEdges(s());
    expect(lit).not.toBe(before);
    expect(lit[1]).toBe(before[1]);
  });
});
