import { describe, expect, it } from 'vitest';
import { spec } from '../test/fixtures';
import { defaultsFor, fieldsOf, localProblem, newItem, parseInput, unwrapNullable } from './schema';

const field = (type: string, name: string) => {
  const found = fieldsOf(spec(type).params_schema).find((f) => f.name === name);
  if (!found) throw new Error(`${type} has no field ${name}`);
  return found;
};

describe('fieldsOf (pydantic v2 schemas)', () => {
  it('picks a widget per field of the llm node', () => {
    const widgets = Object.fromEntries(fieldsOf(spec('llm').params_schema).map((f) => [f.name, f.widget]));
    expect(widgets).toEqual({
      model: 'model',
      provider: 'provider',
      temperature: 'number',
      system_prompt: 'prompt',
      max_tokens: 'integer',
      max_tool_rounds: 'integer',
      tool_budget_s: 'number',
      call_tool_first: 'boolean',
    });
  });

  it('picks the tool widgets by format: the arguments schema as JSON, headers, secrets, workflows, MCP tools', () => {
    const widgets = (type: string) => Object.fromEntries(fieldsOf(spec(type).params_schema).map((f) => [f.name, f.widget]));
    expect(widgets('tool.http')).toMatchObject({ name: 'text', parameters: 'json', url: 'text', headers: 'headers', secrets: 'secretNames', body: 'textarea' });
    expect(widgets('tool.workflow')).toMatchObject({ workflow: 'workflow', name: 'text' });
    expect(widgets('tool.mcp')).toMatchObject({ url: 'text', secret: 'secret', allowed_tools: 'mcpTools' });
    // The tool's name and description come first, as the params class orders them.
    expect(fieldsOf(spec('tool.http').params_schema).slice(0, 3).map((f) => f.name)).toEqual(['name', 'description', 'parameters']);
    const secret = field('tool.mcp', 'secret');
    expect(secret).toMatchObject({ nullable: true });
    expect(parseInput(secret, '')).toBeNull();
    expect(parseInput(field('tool.workflow', 'workflow'), '12')).toBe(12);
  });

  it('unwraps anyOf-with-null into a nullable field keeping bounds and default', () => {
    const temperature = field('llm', 'temperature');
    expect(temperature).toMatchObject({ widget: 'number', nullable: true, min: 0, max: 2, default: 0.7, hasDefault: true });
    expect(field('llm', 'max_tokens')).toMatchObject({ widget: 'integer', nullable: true, min: 1, default: null });
    expect(field('llm', 'model')).toMatchObject({ nullable: false, minLength: 1, maxLength: 200 });
  });

  it('turns Literal enums into selects', () => {
    expect(field('memory.summary', 'llm_source')).toMatchObject({ widget: 'select', options: ['from_parent', 'external'] });
    expect(field('memory.buffer', 'history').options).toEqual(['global', 'node', 'named']);
  });

  it('resolves $ref items into editable object lists', () => {
    const seeds = field('memory.summary', 'seed_messages');
    expect(seeds.widget).toBe('objectList');
    expect(seeds.itemFields!.map((f) => [f.name, f.widget, f.required])).toEqual([
      ['role', 'select', true],
      ['content', 'textarea', true],
    ]);
    const routes = field('router.llm', 'routes');
    expect(routes).toMatchObject({ widget: 'objectList', minItems: 1, maxItems: 50, hasDefault: false });
    expect(routes.itemFields!.find((f) => f.name === 'name')!.pattern).toMatch(/^\^/);
  });

  it('offers the route names for default_route', () => {
    expect(field('router.static', 'default_route')).toMatchObject({ widget: 'select', optionsFrom: 'routes' });
  });

  it('handles booleans and nested $defs with outer keys', () => {
    expect(field('memory.window', 'emit_messages')).toMatchObject({ widget: 'boolean', default: false });
    const root = { $defs: { X: { type: 'string', enum: ['a', 'b'] } } };
    const { schema, nullable } = unwrapNullable(root, { anyOf: [{ $ref: '#/$defs/X' }, { type: 'null' }], title: 'Pick' });
    expect(nullable).toBe(true);
    expect(schema).toMatchObject({ enum: ['a', 'b'], title: 'Pick' });
  });
});

describe('defaultsFor', () => {
  it('fills every schema default', () => {
    expect(defaultsFor(spec('memory.summary').params_schema)).toMatchObject({
      history: 'global',
      key: 'thread',
      max_messages: 20,
      keep_last: 6,
      llm_source: 'from_parent',
      emit_messages: false,
    });
  });

  it('seeds a router with one route named like its default route, so it is valid as dropped', () => {
    const data = defaultsFor(spec('router.llm').params_schema);
    expect(data.default_route).toBe('general');
    expect(data.routes).toEqual([{ name: 'general', description: '' }]);
    expect(defaultsFor(spec('router.static').params_schema).routes).toEqual([{ name: 'default', match: '' }]);
  });

  it('gives new list items unique names', () => {
    const routes = field('router.static', 'routes');
    const item = newItem(routes, [{ name: 'route_2' }, { name: 'default' }]) as { name: string };
    expect(item).toEqual({ name: 'route_3', match: '' });
    expect(newItem(field('memory.buffer', 'seed_messages'), [])).toEqual({ role: 'system', content: '' });
  });
});

describe('parseInput and localProblem', () => {
  it('parses numbers and clears optional ones to null', () => {
    expect(parseInput(field('llm', 'temperature'), '0.3')).toBe(0.3);
    expect(parseInput(field('llm', 'max_tokens'), '')).toBeNull();
    expect(parseInput(field('llm', 'provider'), '4')).toBe(4);
    expect(parseInput(field('llm', 'provider'), '')).toBeNull();
  });

  it('mirrors the schema bounds', () => {
    expect(localProblem(field('llm', 'temperature'), 3)).toBe('Must be at most 2');
    expect(localProblem(field('memory.summary', 'keep_last'), 2.5)).toBe('Must be a whole number');
    expect(localProblem(field('llm', 'model'), '')).toBe('Required');
    expect(localProblem(field('llm', 'max_tokens'), null)).toBeNull();
    const name = field('router.llm', 'routes').itemFields!.find((f) => f.name === 'name')!;
    expect(localProblem(name, 'bad/name')).toBe('Invalid format');
    expect(localProblem(name, 'billing')).toBeNull();
  });
});
