import { describe, expect, it } from 'vitest';
import { checkConnection } from '../editor/ports';
import { nodeTypes, templates } from '../test/fixtures';
import { exportFilename, toExport } from './transfer';

describe('workflow files', () => {
  it('writes the file format and a file name', () => {
    const graph = templates.find((t) => t.key === 'router')!.graph;
    expect(toExport({ name: 'Support router', graph })).toEqual({ skein: 1, name: 'Support router', graph });
    expect(exportFilename('Support router / v2')).toBe('support-router-v2.skein.json');
  });

  it('ships templates whose edges point at their own nodes and ports', () => {
    for (const template of templates) {
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
