import { describe, expect, it } from 'vitest';
import { groupFacts, type Fact } from '../api/participants';
import { checkConnection } from '../editor/ports';
import { nodeTypes } from '../test/fixtures';

function fact(overrides: Partial<Fact>): Fact {
  return {
    id: 1, workflow: 1, workflow_name: 'Bot', key: 'city', value: 'Porto', source: 'extracted', source_message: 'I moved to Porto',
    run: 3, current: true, superseded: null, superseded_by: null, created: '2026-01-02T00:00:00Z', updated: '2026-01-02T00:00:00Z',
    ...overrides,
  };
}

describe('participant facts', () => {
  it('groups facts by workflow, current ones apart from the values they superseded', () => {
    const groups = groupFacts([
      fact({ id: 1, key: 'city', value: 'Lisbon', current: false, superseded: '2026-01-02T00:00:00Z' }),
      fact({ id: 2, key: 'city', value: 'Porto' }),
      fact({ id: 3, key: 'city', value: 'Braga', current: false, superseded: '2026-01-01T00:00:00Z' }),
      fact({ id: 4, key: 'name', value: 'Ana' }),
      fact({ id: 5, workflow: 2, workflow_name: 'Other', key: 'diet', value: 'vegan' }),
    ]);
    expect(groups.map((g) => g.workflow_name)).toEqual(['Bot', 'Other']);
    expect(groups[0].current.map((f) => f.value)).toEqual(['Porto', 'Ana']);
    expect(groups[0].superseded.map((f) => f.value)).toEqual(['Lisbon', 'Braga']); // newest superseded first
  });
});

describe('memory port', () => {
  const types: Record<string, string> = { agent: 'llm', buffer: 'memory.buffer', window: 'memory.window', facts: 'memory.facts', facts2: 'memory.facts' };
  const lookup = (edges: { source: string; target: string; sourceHandle: string; targetHandle: string }[]) => ({
    nodeType: (id: string) => nodeTypes.find((t) => t.type === types[id]),
    nodeData: () => ({}),
    edges: edges.map((e, i) => ({ id: `e${i}`, ...e })),
  });
  const memoryEdge = (source: string) => ({ source, target: 'agent', sourceHandle: 'memory', targetHandle: 'memory' });

  it('takes one history memory and one memory.facts', () => {
    expect(checkConnection(memoryEdge('facts'), lookup([memoryEdge('buffer')]))).toEqual({ ok: true });
    expect(checkConnection(memoryEdge('buffer'), lookup([memoryEdge('facts')]))).toEqual({ ok: true });
    expect(checkConnection(memoryEdge('window'), lookup([memoryEdge('buffer'), memoryEdge('facts')]))).toEqual({
      ok: false, reason: 'only one history memory can attach here (and one memory.facts)',
    });
    expect(checkConnection(memoryEdge('facts2'), lookup([memoryEdge('facts')]))).toEqual({ ok: false, reason: 'only one memory.facts can attach here' });
  });
});
