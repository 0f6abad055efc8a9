import { describe, expect, it } from 'vitest';
import { checkConnection } from '../editor/ports';
import { nodeTypes } from '../test/fixtures';
import { TEMPLATES } from './templates';
import { exportFilename, parseImport, toExport } from './transfer';

describe('export and import', () => {
  it('round-trips a workflow', () => {
    const graph = TEMPLATES.find((t) => t.key === 'router')!.graph;
    const text = JSON.stringify(toExport({ name: 'Support router', graph }));
    expect(parseImport(text, 'fallback')).toEqual({ name: 'Support router', graph });
    expect(exportFilename('Support router / v2')).toBe('support-router-v2.skein.json');
  });

  it('accepts a bare graph and names it after the file', () => {
    const graph = { nodes: [{ id: 'a', type: 'trigger.chat', position: { x: 0, y: 0 }, data: {} }], edges: [] };
    expect(parseImport(JSON.stringify(graph), 'my-bot')).toEqual({ name: 'my-bot', graph });
  });

  it('explains what is wrong with a bad file', () => {
    expect(() => parseImport('not json', 'x')).toThrow(/not JSON/);
    expect(() => parseImport('{"name": "x"}', 'x')).toThrow(/no graph/);
    expect(() => parseImport('{"nodes": [{"type": "llm"}], "edges": []}', 'x')).toThrow(/"id" and "type"/);
  });

  it('ships templates whose edges point at their own nodes and ports', () => {
    for (const template of TEMPLATES) {
      const byId = new Map(template.graph.nodes.map((n) => [n.id, n]));
      template.graph.edges.forEach((edge, i) => {
        // Each edge must be one the editor itself would accept, given the edges before it.
        const verdict = checkConnection(edge, {
          nodeType: (id) => nodeTypes.find((t) => t.type === byId.get(id)?.type),
          nodeData: (id) => byId.get(id)?.data,
          edges: template.graph.edges.slice(0, i),
        });
        expect(verdict, `${template.key}: ${edge.id}`).toEqual({ ok: true });
      });
    }
  });
});
