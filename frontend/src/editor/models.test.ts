import { describe, expect, it } from 'vitest';
import { nodeTypes, templates, templatesModel } from '../test/fixtures';
import { takesModel, withModel } from './models';

const specs = Object.fromEntries(nodeTypes.map((s) => [s.type, s]));

describe('models for new nodes', () => {
  it('knows which node types call a model from their schema', () => {
    expect(nodeTypes.filter(takesModel).map((s) => s.type).sort()).toEqual(['llm', 'llm.model', 'router.llm']);
  });

  it('puts a dropped node on the installation default model when its type calls one', () => {
    const choice = { provider: 5, model: 'smollm2' };
    expect(withModel({ system_prompt: 'Hi' }, specs['llm'], choice)).toEqual({ system_prompt: 'Hi', ...choice });
    expect(withModel({}, specs['output'], choice)).toEqual({});
    expect(withModel({}, specs['llm'], null)).toEqual({});
  });

  it('gets every template on the installation default model, and nothing else on it', () => {
    for (const template of templates) {
      for (const node of template.graph.nodes) {
        if (takesModel(specs[node.type])) expect(node.data, `${template.key}/${node.id}`).toMatchObject(templatesModel);
        else expect(node.data).not.toHaveProperty('model');
      }
    }
    expect(templates.filter((t) => t.graph.nodes.some((n) => takesModel(specs[n.type])))).not.toHaveLength(0);
  });
});
