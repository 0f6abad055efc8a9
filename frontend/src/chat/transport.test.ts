import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../api/client';
import { parseSse, sseTransport, TurnFailedError, type ChatEvent } from './transport';

afterEach(() => vi.unstubAllGlobals());

const sse = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

/** A fetch answering with an event stream delivered in the given chunks. */
function streamFetch(chunks: string[], status = 200) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetchStub = async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        chunks.forEach((c) => controller.enqueue(encoder.encode(c)));
        controller.close();
      },
    });
    return new Response(body, { status, headers: { 'Content-Type': 'text/event-stream' } });
  };
  return { fetch: fetchStub as unknown as typeof fetch, calls };
}

describe('parseSse', () => {
  it('parses events, skips comments and keeps an unfinished tail', () => {
    const { messages, rest } = parseSse(': stream open\n\n' + sse('accepted', { run: 1, thread: 2 }) + 'event: llm.tok');
    expect(messages).toEqual([{ event: 'accepted', data: { run: 1, thread: 2 } }]);
    expect(rest).toBe('event: llm.tok');
  });
});

describe('sseTransport', () => {
  it('streams node events and tokens, then resolves with the reply', async () => {
    const turn = [
      ': stream open\n\n',
      sse('accepted', { run: 7, thread: 3 }),
      sse('node.started', { run: 7, node: 'llm_1', type: 'llm' }),
      // A chunk boundary in the middle of an event.
      sse('llm.token', { run: 7, node: 'llm_1', text: 'Hel' }).slice(0, 20),
      sse('llm.token', { run: 7, node: 'llm_1', text: 'Hel' }).slice(20) + sse('llm.token', { run: 7, node: 'llm_1', text: 'lo' }),
      sse('memory.warning', { run: 7, node: 'summary_1', message: 'summarization timed out' }),
      sse('node.finished', { run: 7, node: 'llm_1', status: 'succeeded', duration_ms: 12 }),
      sse('run.finished', { run: 7, reply: 'Hello', warnings: [{ node: 'summary_1', message: 'summarization timed out' }] }),
    ];
    const server = streamFetch(turn);
    vi.stubGlobal('fetch', server.fetch);
    document.cookie = 'csrftoken=tok';
    const events: ChatEvent[] = [];
    const reply = await sseTransport(5).send('hi', { thread: 3, onEvent: (e) => events.push(e) });

    expect(server.calls[0].url).toBe('/api/workflows/5/chat/stream/');
    expect(JSON.parse(server.calls[0].init.body as string)).toEqual({ message: 'hi', thread: 3 });
    expect(reply).toEqual({ run: 7, thread: 3, reply: 'Hello', warnings: [{ node: 'summary_1', message: 'summarization timed out' }] });
    expect(events).toEqual([
      { type: 'accepted', run: 7, thread: 3 },
      { type: 'node', node: 'llm_1', status: 'running' },
      { type: 'token', node: 'llm_1', text: 'Hel' },
      { type: 'token', node: 'llm_1', text: 'lo' },
      { type: 'warning', warning: { node: 'summary_1', message: 'summarization timed out' } },
      { type: 'node', node: 'llm_1', status: 'succeeded', error: undefined, durationMs: 12 },
    ]);
  });

  it('rejects with the run id when the run fails', async () => {
    vi.stubGlobal('fetch', streamFetch([sse('accepted', { run: 9, thread: 1 }), sse('run.failed', { run: 9, error: 'model not found' })]).fetch);
    const error = await sseTransport(5).send('hi', { thread: null }).catch((e) => e);
    expect(error).toBeInstanceOf(TurnFailedError);
    expect(error).toMatchObject({ message: 'model not found', run: 9 });
  });

  it('rejects when the stream ends without a result', async () => {
    vi.stubGlobal('fetch', streamFetch([sse('accepted', { run: 9, thread: 1 })]).fetch);
    await expect(sseTransport(5).send('hi', { thread: null })).rejects.toThrow(/closed before the turn finished/);
  });

  it('turns a 400 with validation errors into an ApiError with issues', async () => {
    const errors = [{ node: null, field: null, message: 'add a trigger node' }];
    vi.stubGlobal('fetch', async () => new Response(JSON.stringify({ errors }), { status: 400 }));
    const error = await sseTransport(5).send('hi', { thread: null }).catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error.issues).toEqual(errors);
  });
});
