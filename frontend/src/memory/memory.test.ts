import { describe, expect, it } from 'vitest';
import { callLines, editable } from './toolRounds';

const call = { id: 'c1', type: 'function', function: { name: 'lookup_order', arguments: '{"order": "A-1"}' } };

describe('tool rounds on the memory page', () => {
  it('keeps a call and the result it answers when a history is edited', () => {
    expect(editable({ role: 'assistant', content: '', tool_calls: [call], token_count: 9 })).toEqual({ role: 'assistant', content: '', tool_calls: [call] });
    expect(editable({ role: 'tool', content: 'shipped', tool_call_id: 'c1', token_count: 5 })).toEqual({ role: 'tool', content: 'shipped', tool_call_id: 'c1' });
    expect(editable({ role: 'user', content: 'hi', tool_calls: [], tool_call_id: '', token_count: 2 })).toEqual({ role: 'user', content: 'hi' });
  });

  it('shows each call as its name and arguments', () => {
    expect(callLines({ tool_calls: [call, { id: 'c2', function: { name: 'ping', arguments: { a: 1 } } }] })).toEqual([
      'lookup_order({"order": "A-1"})',
      'ping({"a":1})',
    ]);
    expect(callLines({})).toEqual([]);
  });
});
