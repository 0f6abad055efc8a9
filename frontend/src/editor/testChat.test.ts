import { describe, expect, it, vi } from 'vitest';
import { api } from '../api/client';
import { gatedTransport, manualTransport, mountChat, type ServerEvent, type Transport } from '../chat/transport';
import { handleTestChatEvent, type TestChatHooks, type Turn } from './testChat';

function hooks() {
  let turn: Turn | null = null;
  const h = {
    nodeEvent: vi.fn(),
    toolStarted: vi.fn(),
    toolFinished: vi.fn(),
    setIssues: vi.fn(),
    showRun: vi.fn(),
    setTurn: (update: (t: Turn | null) => Turn | null) => {
      turn = update(turn);
    },
  } satisfies TestChatHooks;
  return { h, turn: () => turn };
}

describe('handleTestChatEvent', () => {
  it('lights nodes up, keeps warnings and loads the trace when the run finishes', () => {
    const { h, turn } = hooks();
    const events: ServerEvent[] = [
      { type: 'accepted', data: { run: 7, client_id: 'c', thread: '3' } },
      { type: 'node.started', data: { run: 7, node: 'llm_1', type: 'llm' } },
      { type: 'memory.warning', data: { run: 7, node: 'mem_1', message: 'summarization timed out' } },
      { type: 'node.finished', data: { run: 7, node: 'llm_1', status: 'failed', error: 'boom', duration_ms: 5 } },
      { type: 'run.finished', data: { run: 7, reply: 'hi', warnings: [{ node: 'mem_1', message: 'summarization timed out' }] } },
    ];
    for (const event of events) handleTestChatEvent(event, h);
    expect(h.nodeEvent.mock.calls).toEqual([
      ['llm_1', { status: 'running' }],
      ['mem_1', { warning: 'summarization timed out', status: 'succeeded' }],
      ['llm_1', { status: 'failed', error: 'boom', durationMs: 5 }],
    ]);
    expect(turn()).toEqual({ run: 7, status: 'succeeded', warnings: [{ node: 'mem_1', message: 'summarization timed out' }] });
    expect(h.showRun).toHaveBeenCalledWith(7, [{ node: 'mem_1', message: 'summarization timed out' }]);
  });

  it('lights a tool node while a call of it runs, and says how each call ended', () => {
    const { h } = hooks();
    const events: ServerEvent[] = [
      { type: 'tool.started', data: { run: 9, node: 'lookup', agent: 'agent', tool: 'lookup_order', call_id: 'call_1' } },
      { type: 'tool.started', data: { run: 9, node: null, agent: 'agent', tool: 'no_such_tool', call_id: 'call_2' } },
      { type: 'tool.finished', data: { run: 9, node: 'lookup', agent: 'agent', tool: 'lookup_order', call_id: 'call_1', status: 'failed', error: 'HTTP 500', duration_ms: 40 } },
      { type: 'tool.finished', data: { run: 9, node: 'lookup', agent: 'agent', tool: 'lookup_order', call_id: 'call_3', status: 'succeeded', duration_ms: 7 } },
    ];
    for (const event of events) handleTestChatEvent(event, h);
    expect(h.toolStarted.mock.calls).toEqual([['lookup', 'call_1']]);
    expect(h.toolFinished.mock.calls).toEqual([
      ['lookup', 'call_1', { error: 'HTTP 500', durationMs: 40 }],
      ['lookup', 'call_3', { error: undefined, durationMs: 7 }],
    ]);
    expect(h.nodeEvent).not.toHaveBeenCalled();
  });

  it('lights the memory and its summarizer up while a summary is made', () => {
    const { h } = hooks();
    handleTestChatEvent({ type: 'memory.summarizing', data: { run: 8, node: 'mem', summarizer: 'cheap', messages: 14 } }, h);
    handleTestChatEvent({ type: 'memory.summarized', data: { run: 8, node: 'mem', summarizer: 'cheap', duration_ms: 900 } }, h);
    expect(h.nodeEvent.mock.calls).toEqual([
      ['mem', { status: 'running' }],
      ['cheap', { status: 'running' }],
      ['mem', { status: 'succeeded', durationMs: 900 }],
      ['cheap', { status: 'succeeded', durationMs: 900 }],
    ]);
  });

  it('puts a refused draft’s validation errors on the nodes', () => {
    const { h, turn } = hooks();
    const errors = [{ node: 'llm_1', field: 'model', message: 'model is required' }];
    handleTestChatEvent({ type: 'error', data: { code: 'http_400', message: 'model is required', client_id: 'c', errors } }, h);
    expect(h.setIssues).toHaveBeenCalledWith(errors);
    expect(h.showRun).not.toHaveBeenCalled();
    expect(turn()).toMatchObject({ run: null, status: 'failed', error: 'model is required' });
  });
});

/** A transport whose events the test pushes. */
function fakeTransport() {
  const sent: string[] = [];
  const clientIds: string[] = [];
  let push: (event: ServerEvent) => void = () => {};
  const transport: Transport = {
    start(listener) {
      push = (event) => listener.event(event);
      listener.status('online');
    },
    send: ({ text, clientId }) => {
      sent.push(text);
      clientIds.push(clientId);
    },
    sync: () => {},
    stop: () => {},
  };
  return { transport, sent, clientIds, push: (event: ServerEvent) => push(event) };
}

describe('the widget chat in the editor', () => {
  it('hands every raw event to onEvent and still renders the reply', () => {
    const fake = fakeTransport();
    const seen: string[] = [];
    const host = document.createElement('div');
    document.body.appendChild(host);
    const chat = mountChat(host, { transport: fake.transport, storageKey: null, shadow: false, onEvent: (e) => seen.push(e.type) });
    chat.send('hello');
    expect(fake.sent).toEqual(['hello']);
    fake.push({ type: 'accepted', data: { run: 1, client_id: fake.clientIds[0] } });
    fake.push({ type: 'node.started', data: { run: 1, node: 'llm_1' } });
    fake.push({ type: 'run.finished', data: { run: 1, reply: 'echo: hello' } });
    expect(seen).toEqual(['accepted', 'node.started', 'run.finished']);
    expect(host.querySelector('[data-testid="chat-assistant"]')?.textContent).toContain('echo: hello');
    expect(host.querySelector('[data-testid="chat-user"]')?.classList.contains('unsent')).toBe(false);
    chat.destroy();
  });

  it('says "Looking up" a tool while the agent calls it, and never shows its arguments or result', () => {
    const fake = fakeTransport();
    const host = document.createElement('div');
    const chat = mountChat(host, { transport: fake.transport, storageKey: null, shadow: false });
    chat.send('where is order 42?');
    fake.push({ type: 'accepted', data: { run: 2, client_id: fake.clientIds[0] } });
    const lookup = () => host.querySelector<HTMLElement>('[data-testid="chat-assistant"] [data-testid="chat-lookup"]');
    fake.push({ type: 'tool.started', data: { run: 2, node: 'lookup', tool: 'lookup_order', call_id: 'call_1', arguments: '{"order": 42}' } });
    expect(lookup()?.hidden).toBe(false);
    expect(lookup()?.textContent).toBe('Looking up lookup_order…');
    fake.push({ type: 'tool.finished', data: { run: 2, node: 'lookup', tool: 'lookup_order', call_id: 'call_1', status: 'succeeded', result: 'shipped' } });
    expect(lookup()?.hidden).toBe(true);
    fake.push({ type: 'run.finished', data: { run: 2, reply: 'It has shipped.' } });
    expect(host.querySelector('[data-testid="chat-assistant"]')?.textContent).not.toMatch(/42|Looking up/);
    chat.destroy();
  });

  it('sends a message once, even when the previous turn\'s history arrives before it is acknowledged', () => {
    const fake = fakeTransport();
    const host = document.createElement('div');
    const chat = mountChat(host, { transport: fake.transport, storageKey: null, shadow: false });
    chat.send('one');
    fake.push({ type: 'accepted', data: { run: 1, client_id: fake.clientIds[0] } });
    fake.push({ type: 'run.finished', data: { run: 1, reply: 'echo: one' } });
    chat.send('two'); // sent while the sync that run.finished asked for is still on its way
    fake.push({ type: 'history', data: { thread: null, messages: [], pending: null } });
    expect(fake.sent).toEqual(['one', 'two']);
    chat.destroy();
  });

  it('refuses a message when the gate says why, without sending it', async () => {
    const fake = fakeTransport();
    const host = document.createElement('div');
    const chat = mountChat(host, { transport: gatedTransport(fake.transport, () => Promise.resolve('Could not save the draft')), storageKey: null, shadow: false });
    chat.send('hello');
    await vi.waitFor(() => expect(host.querySelector('[data-testid="chat-error"]')?.textContent).toContain('Could not save the draft'));
    expect(fake.sent).toEqual([]);
    chat.destroy();
  });
});

describe('manualTransport', () => {
  it('tells the chat a manual run as the events of a turn', async () => {
    vi.spyOn(api, 'runManual').mockResolvedValue({ run: 4, thread: 0, reply: 'pong: ping', warnings: [], status: 'succeeded', error: '' });
    const events: ServerEvent[] = [];
    const transport = manualTransport(5);
    transport.start({ event: (e) => events.push(e), status: () => {} });
    transport.send({ text: 'ping', thread: null, clientId: 'c1' });
    await vi.waitFor(() => expect(events).toHaveLength(2));
    expect(api.runManual).toHaveBeenCalledWith(5, 'ping');
    expect(events).toEqual([
      { type: 'accepted', data: { run: 4, client_id: 'c1' } },
      { type: 'run.finished', data: { run: 4, reply: 'pong: ping', warnings: [] } },
    ]);
    vi.restoreAllMocks();
  });
});
