import { fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { api } from '../api/client';
import type { RunRound, ToolCall } from '../api/types';
import { run, runStep } from '../test/fixtures';
import { callCount, callsIn, offeredTools, prettyJson, roundSummary } from './rounds';
import { RunPage } from './RunPage';

const ORDER_SCHEMA = { type: 'object', properties: { order: { type: 'integer' } }, required: ['order'] };
const offered = [{ type: 'function', function: { name: 'lookup_order', description: 'Look up an order', parameters: ORDER_SCHEMA } }];

function call(overrides: Partial<ToolCall> = {}): ToolCall {
  return {
    id: 'call_1',
    name: 'lookup_order',
    arguments: '{"order": 42}',
    tool_node: 'lookup',
    result: '{"order": "42", "status": "shipped"}',
    error: '',
    duration_ms: 35,
    details: {},
    ...overrides,
  };
}

const system = { role: 'system', content: 'You are a test agent.' };
const user = { role: 'user', content: 'where is my order 42?' };
const asked = { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup_order', arguments: '{"order": 42}' } }] };
const answered = { role: 'tool', content: '{"order": "42", "status": "shipped"}', tool_call_id: 'call_1' };
const rounds: RunRound[] = [
  { messages: [system, user], tools: offered, tool_choice: 'auto', tool_calls: [call(), call({ id: 'call_2', arguments: '{"order": 7}', result: '', error: 'HTTP 500 from the order service', duration_ms: 12 })] },
  { messages: [system, user, asked, answered], tools: offered, tool_choice: 'auto', tool_calls: [] },
];

describe('reading rounds', () => {
  it('says what the model did in each round, counting calls and failures', () => {
    expect(rounds.map(roundSummary)).toEqual(['called lookup_order ×2 (1 failed)', 'answered']);
    expect(callCount({ rounds })).toBe(2);
    expect(callCount({ rounds: null })).toBe(0);
  });

  it('reads the functions offered and an assistant message’s calls; JSON is laid out, other text kept', () => {
    expect(offeredTools(rounds[0])).toEqual([{ name: 'lookup_order', description: 'Look up an order', parameters: ORDER_SCHEMA }]);
    expect(callsIn(asked)).toEqual([{ id: 'call_1', name: 'lookup_order', arguments: '{"order": 42}' }]);
    expect(prettyJson('{"order": 42}')).toBe('{\n  "order": 42\n}');
    expect(prettyJson('plain words')).toBe('plain words');
    expect(prettyJson('"a string"')).toBe('"a string"');
  });
});

describe('the trace of an agent', () => {
  afterEach(() => vi.restoreAllMocks());

  it('shows each round: what was sent (collapsed), each call with its arguments, result, time and error, then the answer', async () => {
    vi.spyOn(api, 'run').mockResolvedValue(
      run({ steps: [runStep('agent', 'llm', { output: 'Your order has shipped.', messages: rounds[0].messages, rounds })] }),
    );
    render(<RunPage runId={5} />);
    fireEvent.click(await screen.findByText('agent'));
    const first = screen.getByTestId('round-1');
    expect(within(first).getByText('called lookup_order ×2 (1 failed)')).toBeTruthy();
    const sent = within(first).getByText(/Sent to the model: 2 messages, 1 tool/).closest('details')!;
    expect(sent.open).toBe(false);
    expect(within(sent).getByTestId('offered-tools').textContent).toContain('"order"');
    const ok = within(first).getByTestId('tool-call-call_1');
    expect(within(ok).getByTestId('tool-call-arguments').textContent).toContain('"order": 42');
    expect(within(ok).getByTestId('tool-call-result').textContent).toContain('"status": "shipped"');
    expect(ok.textContent).toContain('35 ms');
    const failed = within(first).getByTestId('tool-call-call_2');
    expect(within(failed).getByTestId('tool-call-error').textContent).toBe('HTTP 500 from the order service');
    // Round 2 was sent the call and its result, and answered.
    const second = screen.getByTestId('round-2');
    expect(within(second).getByText('answered')).toBeTruthy();
    expect(within(second).getByText(/Sent to the model: 4 messages/)).toBeTruthy();
    expect(within(second).getByText('answers call_1')).toBeTruthy();
    expect(screen.getByTestId('rounds').textContent).toContain('Your order has shipped.');
  });
});
