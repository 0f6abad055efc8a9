import { describe, expect, it } from 'vitest';
import { countsLine, defaultCheck, describeCheck, fieldsOf, makeCheck, targetsOf } from './checks';

describe('checks', () => {
  const targets = targetsOf([
    { id: 'chat', type: 'trigger.chat' },
    { id: 'bot', type: 'llm' },
    { id: 'route', type: 'router.llm' },
    { id: 'mem', type: 'memory.summary', data: { history: 'named', name: 'shared' } },
    { id: 'buf', type: 'memory.buffer' },
  ]);

  it('offers model-calling nodes and summarizing memories only', () => {
    expect(targets).toEqual({ modelNodes: ['bot', 'route'], summaryMemories: ['mem', 'shared'] });
  });

  it('builds checks in the API shape, leaving out an empty provider', () => {
    expect(makeCheck('reply_contains', { text: '42' })).toEqual({ reply_contains: '42' });
    expect(makeCheck('sent_tokens_at_most', { node: 'bot', tokens: '300' })).toEqual({ sent_tokens_at_most: { node: 'bot', tokens: 300 } });
    expect(makeCheck('judge', { rubric: 'polite', model: 'm', provider: '' })).toEqual({ judge: { rubric: 'polite', model: 'm' } });
    expect(makeCheck('judge', { rubric: 'polite', model: 'm', provider: '4' })).toEqual({ judge: { rubric: 'polite', model: 'm', provider: 4 } });
    expect(defaultCheck('sent_contains', targets, 'echo: hi')).toEqual({ sent_contains: { node: 'bot', text: 'echo: hi' } });
  });

  it('reads a check back into fields and describes it', () => {
    expect(fieldsOf({ reply_matches: '^hi' })).toEqual({ pattern: '^hi' });
    expect(describeCheck({ sent_excludes: { node: 'bot', text: 'secret' } })).toBe('bot was not sent “secret”');
    expect(describeCheck({ summary_contains: { memory: 'mem', text: 'Ada' } })).toBe('summary of mem contains “Ada”');
  });

  it('counts a run, with what is still to go', () => {
    expect(countsLine({ passed: 2, failed: 1, errors: 0, total: 5 })).toBe('2 passed · 1 failed · 2 to go');
    expect(countsLine({ passed: 0, failed: 0, errors: 1 })).toBe('0 passed · 1 error');
  });
});

describe('progress', () => {
  it('opens the socket on the page’s own host, secure when the page is', async () => {
    const { socketUrl } = await import('./progress');
    expect(socketUrl('/ws/test-runs/3/', { protocol: 'https:', host: 'skein.example' } as Location)).toBe('wss://skein.example/ws/test-runs/3/');
    expect(socketUrl('/ws/test-runs/3/', { protocol: 'http:', host: '127.0.0.1:8000' } as Location)).toBe('ws://127.0.0.1:8000/ws/test-runs/3/');
  });
});
