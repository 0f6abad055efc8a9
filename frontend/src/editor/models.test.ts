import { describe, expect, it } from 'vitest';
import { nodeTypes } from '../test/fixtures';
import { TEMPLATES } from '../workflows/templates';
import { graphWithModel, takesModel } from './models';

const specs = Object.fromEntries(nodeTypes.map((s) => [s.type, s]));

describe('models for new nodes', () => {
  it('knows which node types call a model from their schema', () => {
    expect(nodeTypes.filter(takesModel).map((s) => s.type).sort()).toEqual(['llm', 'llm.model', 'router.llm']);
  });

  it('puts every template on the installation default model, and nothing else on it', () => {
    const choice = { provider: 5, model: 'smollm2' };
    for (const template of TEMPLATES) {
      const graph = graphWithModel(template.graph, specs, choice);
      for (const node of graph.nodes) {
        if (takesModel(specs[node.type])) expect(node.data, `${template.key}/${node.id}`).toMatchObject(choice);
        else expect(node.data).not.toHaveProperty('model');
      }
    }
    expect(TEMPLATES.filter((t) => t.graph.nodes.some((n) => takesModel(specs[n.type])))).not.toHaveLength(0);
    // the templates themselves are left as they are
    expect(TEMPLATES.flatMap((t) => t.graph.nodes).some((n) => 'provider' in n.data)).toBe(false);
  });
});
