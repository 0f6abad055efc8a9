import { afterEach, describe, expect, it, vi } from 'vitest';

import type { ServerEvent } from './protocol';
import { streamTransport, visitorId } from './transports';

afterEach(() => vi.unstubAllGlobals());

const sse = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

/** A fetch answering once with ``response``; records the calls. */
function stubFetch(response: () => Response) {
  const calls: { url: string; init: RequestInit }[] = [];
  vi.stubGlobal('fetch', (url: string, init: RequestInit) => {
    calls.push({ url, init });
    return Promise.resolve(response());
  });
  return calls;
}

function stream(chunks: string[]): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      chunks.forEach((chunk) => controller.enqueue(encoder.encode(chunk)));
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
}

/** Starts the transport, sends one message and collects every event until ``until`` arrives. */
async function turn(options: Parameters<typeof streamTransport>[0], until: string) {
  const events: ServerEvent[] = [];
  const transport = streamTransport(options);
  await new Promise<void>((resolve) => {
    transport.start({
      status: () => {},
      event: (event) => {
        events.push(event);
        if (event.type === until) resolve();
      },
    });
    transport.send({ text: 'hi', thread: null, clientId: 'c1' });
  });
  return events;
}

const options = { url: '/api/workflows/5/chat/stream/', messagesUrl: (t: string) => `/api/threads/${t}/messages/`, headers: () => ({ 'X-CSRFToken': 'tok' }) };

describe('streamTransport', () => {
  it('asks for the event stream with the caller headers and passes every run event on', async () => {
    const calls = stubFetch(() =>
      stream([
        ': stream open\n\n',
        sse('accepted', { run: 7, thread: 3 }),
        sse('node.started', { run: 7, node: 'llm_1', type: 'llm' }),
        // A chunk boundary in the middle of an event.
        sse('llm.token', { run: 7, node: 'llm_1', text: 'Hel' }).slice(0, 20),
        sse('llm.token', { run: 7, node: 'llm_1', text: 'Hel' }).slice(20),
        sse('memory.warning', { run: 7, node: 'summary_1', message: 'summarization timed out' }),
        sse('node.finished', { run: 7, node: 'llm_1', status: 'succeeded', duration_ms: 12 }),
        sse('run.finished', { run: 7, reply: 'Hel', warnings: [] }),
      ]),
    );
    const events = await turn(options, 'run.finished');

    expect(calls[0].url).toBe('/api/workflows/5/chat/stream/');
    expect(calls[0].init.headers).toMatchObject({ Accept: 'text/event-stream, application/json', 'X-CSRFToken': 'tok', 'Content-Type': 'application/json' });
    expect(JSON.parse(calls[0].init.body as string)).toEqual({ message: 'hi', thread: null });
    expect(events.map((e) => e.type)).toEqual(['thread.created', 'accepted', 'node.started', 'llm.token', 'memory.warning', 'node.finished', 'run.finished']);
    expect(events[1].data).toEqual({ run: 7, client_id: 'c1', thread: '3' });
    expect(events[4].data).toMatchObject({ node: 'summary_1', message: 'summarization timed out' });
  });

  it('turns a refused request into an error for that message, with the validation errors', async () => {
    const errors = [{ node: 'llm_1', field: 'model', message: 'model is required' }];
    stubFetch(() => new Response(JSON.stringify({ errors }), { status: 400 }));
    const [event] = await turn(options, 'error');
    expect(event).toEqual({ type: 'error', data: { code: 'http_400', message: 'model is required', client_id: 'c1', errors } });
  });
});

describe('streamTransport resuming a conversation', () => {
  it('waits for a turn that was still running when the page loaded, then tells its ending', async () => {
    vi.useFakeTimers();
    let runStatus = 'running';
    const calls: string[] = [];
    const answer = (url: string) => {
      calls.push(url);
      if (url === '/api/threads/3/messages/') return new Response(JSON.stringify([{ seq: 1, role: 'user', content: 'hi', run: 7 }]));
      const body = { id: 7, status: runStatus, output: 'Hello', warnings: [], steps: [{ type: 'output', details: { cut: true } }] };
      return new Response(JSON.stringify(body));
    };
    vi.stubGlobal('fetch', (url: string) => Promise.resolve(answer(url)));
    const events: ServerEvent[] = [];
    const transport = streamTransport({ ...options, runUrl: (run) => `/api/runs/${run}/` });
    transport.start({ status: () => {}, event: (event) => void events.push(event) });
    transport.sync('3', 0);
    await vi.waitFor(() => expect(events).toHaveLength(1));
    expect(events[0]).toEqual({ type: 'history', data: { thread: '3', messages: [{ seq: 1, role: 'user', content: 'hi', run: 7 }], pending: 7 } });
    await vi.advanceTimersByTimeAsync(2000);
    expect(calls.filter((c) => c === '/api/runs/7/')).toHaveLength(1);
    expect(events).toHaveLength(1); // still running: it looks again later
    runStatus = 'succeeded';
    await vi.advanceTimersByTimeAsync(2000);
    expect(events[1]).toEqual({ type: 'run.finished', data: { run: 7, reply: 'Hello', warnings: [], cut: true } });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls.filter((c) => c === '/api/runs/7/')).toHaveLength(2); // and then stops looking
    transport.stop();
    vi.useRealTimers();
  });

  it('asks about nothing pending when the last message was answered, or without a run URL', async () => {
    vi.stubGlobal('fetch', () => Promise.resolve(new Response(JSON.stringify([{ seq: 1, role: 'user', content: 'hi', run: 7 }, { seq: 2, role: 'assistant', content: 'yo', run: 7 }]))));
    const events: ServerEvent[] = [];
    const transport = streamTransport({ ...options, runUrl: (run) => `/api/runs/${run}/` });
    transport.start({ status: () => {}, event: (event) => void events.push(event) });
    transport.sync('3', 1);
    await vi.waitFor(() => expect(events).toHaveLength(1));
    expect(events[0].data).toEqual({ thread: '3', messages: [{ seq: 2, role: 'assistant', content: 'yo', run: 7 }], pending: null });
  });
});

describe('visitorId', () => {
  it('makes an unguessable id once per widget key and keeps it', () => {
    const store = new Map<string, string>();
    const storage = { getItem: (k: string) => store.get(k) ?? null, setItem: (k: string, v: string) => void store.set(k, v) };
    const first = visitorId('wk_a', storage);
    expect(first).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(visitorId('wk_a', storage)).toBe(first);
    expect(visitorId('wk_b', storage)).not.toBe(first);
    store.set('skein:visitor:wk_a', 'bad id!');
    expect(visitorId('wk_a', storage)).not.toBe('bad id!');
    expect(visitorId('wk_c', null)).toMatch(/^[A-Za-z0-9_-]{24}$/);
  });
});
