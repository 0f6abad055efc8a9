import { describe, expect, it } from 'vitest';
import { describeDiff } from './versions';

describe('describeDiff', () => {
  it('lists added, removed and changed nodes and edges in words', () => {
    const lines = describeDiff({
      from: '1',
      to: 'draft',
      nodes: {
        added: [{ id: 'fmt', type: 'template' }],
        removed: [{ id: 'old', type: 'llm' }],
        changed: [{ id: 'agent', type: 'llm', params: { system_prompt: { from: 'one', to: 'x'.repeat(80) }, temperature: { from: undefined, to: 0.2 } } }],
        moved: ['out'],
      },
      edges: {
        added: [{ id: 'e', source: 'agent', sourceHandle: 'output', target: 'fmt', targetHandle: 'input' }],
        removed: [{ id: 'f', source: 'agent', sourceHandle: null, target: 'out', targetHandle: null }],
      },
    });
    expect(lines).toEqual([
      { kind: 'added', text: 'node fmt (template)' },
      { kind: 'removed', text: 'node old (llm)' },
      { kind: 'changed', text: `node agent: system_prompt one → ${'x'.repeat(57)}…` },
      { kind: 'changed', text: 'node agent: temperature (default) → 0.2' },
      { kind: 'added', text: 'edge agent.output → fmt.input' },
      { kind: 'removed', text: 'edge agent.output → out.input' },
      { kind: 'moved', text: 'moved: out' },
    ]);
  });
});
