import { fireEvent, render, screen, within } from '@testing-library/react';
import { useState } from 'react';
import { describe, expect, it, vi } from 'vitest';
import type { NodeParams, ValidationIssue } from '../api/types';
import { provider, spec } from '../test/fixtures';
import { defaultsFor } from './schema';
import { SchemaForm, unplacedIssues, type FormContext } from './SchemaForm';

const providers = [
  provider({ id: 4, name: 'Fake', kind: 'openai_compatible', api_base: 'http://127.0.0.1:9/v1' }),
  provider({ id: 9, name: 'Team OpenAI', kind: 'openai' }),
];

/** The form wired like the inspector: patches are merged into the params it shows. */
function Harness({ type, initial, issues = [], onPatch }: { type: string; initial?: NodeParams; issues?: ValidationIssue[]; onPatch: (p: NodeParams) => void }) {
  const [value, setValue] = useState<NodeParams>(initial ?? defaultsFor(spec(type).params_schema));
  return (
    <SchemaForm
      schema={spec(type).params_schema}
      value={value}
      issues={issues}
      context={{ providers, modelSuggestions: ['gpt-4o-mini', 'gpt-4o'] }}
      onChange={(patch) => {
        onPatch(patch);
        setValue((v) => ({ ...v, ...patch }));
      }}
    />
  );
}

const byName = (name: string) => document.querySelector(`[name="${name}"]`) as HTMLInputElement;

describe('SchemaForm', () => {
  it('renders the llm params with the right controls', () => {
    render(<Harness type="llm" onPatch={() => {}} />);
    // The model is picked among the models the provider serves, or typed ("Other model").
    const model = byName('model') as unknown as HTMLSelectElement;
    expect(model.tagName).toBe('SELECT');
    expect([...model.options].map((o) => o.text)).toEqual(['gpt-4o-mini', 'gpt-4o', 'Other model (type its name)…']);
    expect(model.value).toBe('gpt-4o-mini');
    expect(byName('system_prompt').tagName).toBe('TEXTAREA');
    expect(byName('temperature')).toMatchObject({ type: 'number', min: '0', max: '2', value: '0.7' });
    const provider = byName('provider') as unknown as HTMLSelectElement;
    expect([...provider.options].map((o) => o.text)).toEqual(['Environment keys (no provider)', 'Fake · openai compatible', 'Team OpenAI · openai']);
  });

  it('sends typed values: provider ids as numbers, cleared optional numbers as null', () => {
    const onPatch = vi.fn<(patch: NodeParams) => void>();
    render(<Harness type="llm" initial={{ model: 'gpt-4o-mini', max_tokens: 100 }} onPatch={onPatch} />);
    fireEvent.change(byName('provider'), { target: { value: '9' } });
    expect(onPatch).toHaveBeenLastCalledWith({ provider: 9 });
    fireEvent.change(byName('max_tokens'), { target: { value: '' } });
    expect(onPatch).toHaveBeenLastCalledWith({ max_tokens: null });
    fireEvent.change(byName('temperature'), { target: { value: '1.5' } });
    expect(onPatch).toHaveBeenLastCalledWith({ temperature: 1.5 });
    fireEvent.change(byName('model'), { target: { value: 'gpt-4o' } });
    expect(onPatch).toHaveBeenLastCalledWith({ model: 'gpt-4o' });
    const other = [...(byName('model') as unknown as HTMLSelectElement).options].find((o) => o.text.startsWith('Other'))!;
    fireEvent.change(byName('model'), { target: { value: other.value } });
    expect(byName('model').tagName).toBe('INPUT'); // free text, the served models still suggested
    fireEvent.change(byName('model'), { target: { value: 'claude-sonnet-4-0' } });
    expect(onPatch).toHaveBeenLastCalledWith({ model: 'claude-sonnet-4-0' });
    fireEvent.click(screen.getByRole('button', { name: 'Choose from the 2 served models' }));
    expect(onPatch).toHaveBeenLastCalledWith({ model: 'gpt-4o-mini' });
    expect(byName('model').tagName).toBe('SELECT');
  });

  it('types the model when the provider lists none, or the model is not among those listed', () => {
    const { unmount } = render(<Harness type="llm" initial={{ model: 'my-finetune' }} onPatch={() => {}} />);
    expect(byName('model')).toMatchObject({ tagName: 'INPUT', value: 'my-finetune' });
    unmount();
    render(
      <SchemaForm schema={spec('llm').params_schema} value={{ model: 'x' }} issues={[]} onChange={() => {}} context={{ providers, modelSuggestions: [] }} />,
    );
    expect(byName('model').tagName).toBe('INPUT');
    expect(screen.queryByRole('button', { name: /served models/ })).toBeNull();
  });

  it('shows local bound errors and server errors next to their field', () => {
    const issues = [
      { node: 'llm_1', field: 'max_tokens', message: 'Input should be greater than or equal to 1' },
      { node: 'llm_1', field: 'temperature', message: 'Input should be less than or equal to 2' },
    ];
    render(<Harness type="llm" initial={{ temperature: 7, max_tokens: 5 }} issues={issues} onPatch={() => {}} />);
    // A local check answers first, in plain words; the server's message shows where the form cannot know.
    const temperature = document.querySelector('[data-field="temperature"]') as HTMLElement;
    expect(within(temperature).getByRole('alert')).toHaveTextContent(/^Must be at most 2$/);
    expect(byName('temperature')).toHaveAttribute('aria-invalid', 'true');
    const maxTokens = document.querySelector('[data-field="max_tokens"]') as HTMLElement;
    expect(within(maxTokens).getByRole('alert')).toHaveTextContent('Input should be greater than or equal to 1');
  });

  it('edits a router\'s routes as a list, with errors on the item field', () => {
    const onPatch = vi.fn<(patch: NodeParams) => void>();
    const issues = [{ node: 'r', field: 'routes.1.name', message: 'route names must be unique' }];
    render(
      <Harness
        type="router.llm"
        initial={{ routes: [{ name: 'general', description: '' }, { name: 'general', description: '' }], default_route: 'general' }}
        issues={issues}
        onPatch={onPatch}
      />,
    );
    expect(byName('routes.0.name').value).toBe('general');
    const second = document.querySelector('[data-field="routes.1.name"]') as HTMLElement;
    expect(within(second).getByRole('alert')).toHaveTextContent('route names must be unique');

    fireEvent.click(screen.getByRole('button', { name: '+ Add route' }));
    expect(onPatch).toHaveBeenLastCalledWith({
      routes: [{ name: 'general', description: '' }, { name: 'general', description: '' }, { name: 'route_3', description: '' }],
    });
    fireEvent.change(byName('routes.1.name'), { target: { value: 'billing' } });
    const lastRoutes = () => onPatch.mock.lastCall![0].routes as { name: string; description: string }[];
    expect(lastRoutes()[1]).toEqual({ name: 'billing', description: '' });
    const defaultRoute = byName('default_route') as unknown as HTMLSelectElement;
    expect([...defaultRoute.options].map((o) => o.value)).toEqual(['general', 'billing', 'route_3']);
    fireEvent.click(screen.getByRole('button', { name: 'Remove route 1' }));
    expect(lastRoutes().map((r) => r.name)).toEqual(['billing', 'route_3']);
  });

  it('keeps the last route of a router (minItems) and edits seed messages', () => {
    const onPatch = vi.fn<(patch: NodeParams) => void>();
    render(<Harness type="router.static" onPatch={onPatch} />);
    expect(screen.getByRole('button', { name: 'Remove route 1' })).toBeDisabled();

    render(<Harness type="memory.window" onPatch={onPatch} />);
    fireEvent.click(screen.getByRole('button', { name: '+ Add seed message' }));
    expect(onPatch).toHaveBeenLastCalledWith({ seed_messages: [{ role: 'system', content: '' }] });
    fireEvent.change(byName('seed_messages.0.role'), { target: { value: 'user' } });
    fireEvent.change(byName('seed_messages.0.content'), { target: { value: 'Hi!' } });
    expect(onPatch).toHaveBeenLastCalledWith({ seed_messages: [{ role: 'user', content: 'Hi!' }] });
    fireEvent.click(byName('emit_messages'));
    expect(onPatch).toHaveBeenLastCalledWith({ emit_messages: true });
  });

  it('leaves issues that no field shows to the panel', () => {
    const issues = [
      { node: 'm', field: 'llm', message: 'attach an llm.model node' },
      { node: 'm', field: null, message: 'keep_last must be smaller than max_messages' },
      { node: 'm', field: 'keep_last', message: 'too big' },
    ];
    expect(unplacedIssues(spec('memory.summary').params_schema, issues).map((i) => i.field)).toEqual(['llm', null]);
  });

  it('shows the summary prompt\'s default, and goes back to it from an edited or empty prompt', () => {
    const defaultPrompt = spec('memory.summary').params_schema.properties!.summary_prompt.default as string;
    expect(defaultPrompt).toMatch(/what the user talked about/);
    const onPatch = vi.fn<(patch: NodeParams) => void>();
    render(<Harness type="memory.summary" onPatch={onPatch} />);
    const prompt = byName('summary_prompt') as unknown as HTMLTextAreaElement;
    expect(prompt.value).toBe(defaultPrompt);
    expect(screen.getByText(/the default/)).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Use the default' })).toBeNull();
    fireEvent.change(prompt, { target: { value: '' } });
    expect(prompt.placeholder).toBe(defaultPrompt);
    fireEvent.click(screen.getByRole('button', { name: 'Use the default' }));
    expect(onPatch).toHaveBeenLastCalledWith({ summary_prompt: defaultPrompt });
    expect(prompt.value).toBe(defaultPrompt);
  });
});

describe('SchemaForm: a tool’s params', () => {
  function ToolHarness({ type, initial, context = {}, onPatch }: { type: string; initial: NodeParams; context?: Partial<FormContext>; onPatch: (p: NodeParams) => void }) {
    const [value, setValue] = useState<NodeParams>({ ...defaultsFor(spec(type).params_schema), ...initial });
    return (
      <SchemaForm
        schema={spec(type).params_schema}
        value={value}
        issues={[]}
        context={{ providers: [], modelSuggestions: [], ...context }}
        onChange={(patch) => {
          onPatch(patch);
          setValue((v) => ({ ...v, ...patch }));
        }}
      />
    );
  }

  it('edits the arguments schema as JSON, with the parse error shown inline and nothing sent until it parses', () => {
    const onPatch = vi.fn<(patch: NodeParams) => void>();
    render(<ToolHarness type="tool.http" initial={{ name: 'lookup', description: 'Look up', url: 'http://x' }} onPatch={onPatch} />);
    const box = byName('parameters');
    expect(JSON.parse(box.value)).toEqual({ type: 'object', properties: {} });
    fireEvent.change(box, { target: { value: '{"type": "object", "properties": {' } });
    expect(screen.getByTestId('json-error').textContent).toMatch(/^Not valid JSON: /);
    expect(box.getAttribute('aria-invalid')).toBe('true');
    expect(onPatch).not.toHaveBeenCalled();
    fireEvent.change(box, { target: { value: '{"type": "object", "properties": {"order": {"type": "integer"}}}' } });
    expect(screen.queryByTestId('json-error')).toBeNull();
    expect(onPatch).toHaveBeenLastCalledWith({ parameters: { type: 'object', properties: { order: { type: 'integer' } } } });
  });

  it('puts a stored secret into a header by name, and keeps the secrets list in step with the headers', () => {
    const onPatch = vi.fn<(patch: NodeParams) => void>();
    render(<ToolHarness type="tool.http" initial={{ name: 'lookup', description: 'Look up', url: 'http://x' }} context={{ secretNames: ['orders_key', 'other'] }} onPatch={onPatch} />);
    const hint = screen.getByTestId('secret-hint');
    fireEvent.click(within(hint).getByRole('button', { name: 'orders_key' }));
    expect(onPatch).toHaveBeenLastCalledWith({ headers: { Authorization: 'Bearer {{ secrets.orders_key }}' }, secrets: ['orders_key'] });
    expect(byName('headers.0.value').value).toBe('Bearer {{ secrets.orders_key }}');
    expect(screen.getAllByTestId('used-secret').map((e) => e.textContent)).toEqual(['orders_key']);
    fireEvent.change(byName('headers.0.value'), { target: { value: 'Bearer {{ secrets.gone }}' } });
    expect(onPatch).toHaveBeenLastCalledWith({ headers: { Authorization: 'Bearer {{ secrets.gone }}' }, secrets: ['gone'] });
    expect(screen.getByTestId('used-secret').textContent).toBe('gone · no such secret');
    fireEvent.click(screen.getByRole('button', { name: 'Remove header 1' }));
    expect(onPatch).toHaveBeenLastCalledWith({ headers: {}, secrets: [] });
  });

  it('offers the published workflows for a workflow tool, and the secrets for an MCP server', () => {
    const onPatch = vi.fn<(patch: NodeParams) => void>();
    render(<ToolHarness type="tool.workflow" initial={{}} context={{ publishedWorkflows: [{ id: 3, name: 'Orders' }] }} onPatch={onPatch} />);
    const workflow = byName('workflow') as unknown as HTMLSelectElement;
    expect([...workflow.options].map((o) => o.text)).toEqual(['Choose a published workflow…', 'Orders · #3']);
    fireEvent.change(workflow, { target: { value: '3' } });
    expect(onPatch).toHaveBeenLastCalledWith({ workflow: 3 });
  });

  it('lists an MCP server’s tools on “Refresh tools” to choose the allowed ones, and says why a server could not be listed', async () => {
    const onPatch = vi.fn<(patch: NodeParams) => void>();
    const tool = (name: string) => ({ name, description: `${name} things`, parameters: {} });
    const listMcpTools = vi
      .fn<NonNullable<FormContext['listMcpTools']>>()
      .mockResolvedValueOnce({ tools: [tool('lookup_order'), tool('cancel_order')], error: '' })
      .mockResolvedValueOnce({ tools: [], error: 'connection refused' });
    render(<ToolHarness type="tool.mcp" initial={{ url: 'http://mcp.test/mcp', secret: 'mcp_token' }} context={{ secretNames: ['mcp_token'], listMcpTools }} onPatch={onPatch} />);
    expect((byName('secret') as unknown as HTMLSelectElement).value).toBe('mcp_token');
    fireEvent.click(screen.getByRole('button', { name: 'Refresh tools' }));
    await screen.findByText('2 tools offered');
    expect(listMcpTools).toHaveBeenCalledWith('http://mcp.test/mcp', 'mcp_token');
    expect(byName('allowed_tools.lookup_order')).toMatchObject({ checked: true, disabled: true }); // all of them, for now
    fireEvent.click(byName('allowed_tools.all'));
    expect(onPatch).toHaveBeenLastCalledWith({ allowed_tools: ['lookup_order', 'cancel_order'] });
    fireEvent.click(byName('allowed_tools.cancel_order'));
    expect(onPatch).toHaveBeenLastCalledWith({ allowed_tools: ['lookup_order'] });
    expect(byName('allowed_tools.lookup_order')).toMatchObject({ checked: true, disabled: true }); // the last one stays
    fireEvent.click(screen.getByRole('button', { name: 'Refresh tools' }));
    expect((await screen.findByTestId('mcp-error')).textContent).toBe("The server's tools could not be listed: connection refused");
    // The chosen tool is kept, marked as one the server no longer offers.
    expect(byName('allowed_tools.lookup_order').closest('li')?.textContent).toContain('not offered by the server');
  });
});
