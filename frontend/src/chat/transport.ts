// How a chat turn reaches the server. The ChatPanel only knows the ChatTransport interface, so
// the transports below (SSE streaming, plain HTTP) can be swapped, e.g. for the widget's
// WebSocket, without touching the UI.
import { api, errorFrom, send } from '../api/client';
import type { ChatReply, RunWarning } from '../api/types';

export type ChatEvent =
  | { type: 'accepted'; run: number; thread: number | null }
  | { type: 'token'; node: string; text: string }
  | { type: 'node'; node: string; status: 'running' | 'succeeded' | 'failed'; error?: string; durationMs?: number }
  | { type: 'warning'; warning: RunWarning };

export interface ChatTransport {
  /** Sends one message; resolves when the turn has finished. `onEvent` receives live progress, if the transport has any. */
  send(message: string, options: { thread: number | null; onEvent?: (event: ChatEvent) => void }): Promise<ChatReply>;
}

/** The turn ran and failed; `run` has the trace. */
export class TurnFailedError extends Error {
  readonly run: number | null;

  constructor(message: string, run: number | null) {
    super(message);
    this.name = 'TurnFailedError';
    this.run = run;
  }
}

/** `POST /api/workflows/{id}/chat/` (a chat trigger) or `/run/` (the manual trigger), answered once the turn is over. */
export function httpTransport(workflowId: number, mode: 'chat' | 'manual' = 'chat'): ChatTransport {
  return {
    async send(message, { thread }) {
      const reply = mode === 'manual' ? await api.runManual(workflowId, message) : await api.chat(workflowId, message, thread);
      if (reply.status === 'failed') throw new TurnFailedError(reply.error || 'The run failed.', reply.run);
      return reply;
    },
  };
}

interface SseMessage {
  event: string;
  data: Record<string, unknown>;
}

/** Splits a text/event-stream into messages; keeps an incomplete tail for the next chunk. */
export function parseSse(buffer: string): { messages: SseMessage[]; rest: string } {
  const blocks = buffer.replace(/\r\n/g, '\n').split('\n\n');
  const rest = blocks.pop() ?? '';
  const messages: SseMessage[] = [];
  for (const block of blocks) {
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (!data.length) continue;
    try {
      messages.push({ event, data: JSON.parse(data.join('\n')) as Record<string, unknown> });
    } catch {
      // A malformed event is skipped; the terminal event still ends the turn.
    }
  }
  return { messages, rest };
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
const num = (v: unknown) => (typeof v === 'number' ? v : null);

/**
 * `POST /api/workflows/{id}/chat/stream/`: Server-Sent Events with the run's events as they
 * happen (nodes starting and finishing, tokens), ending with `run.finished` or `run.failed`.
 */
export function sseTransport(workflowId: number): ChatTransport {
  return {
    async send(message, { thread, onEvent }) {
      const url = `/api/workflows/${workflowId}/chat/stream/`;
      // DRF negotiates on Accept: errors come back as JSON, a started turn as the event stream.
      const response = await send('POST', url, thread ? { message, thread } : { message }, 'text/event-stream, application/json');
      if (!response.ok) throw await errorFrom(response, url);
      if (!response.body) throw new Error('The server sent no event stream.');
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      let run: number | null = null;
      let threadId = thread;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const parsed = parseSse(buffer + decoder.decode(value, { stream: true }));
        buffer = parsed.rest;
        for (const { event, data } of parsed.messages) {
          switch (event) {
            case 'accepted':
              run = num(data.run);
              threadId = num(data.thread) ?? threadId;
              onEvent?.({ type: 'accepted', run: run ?? 0, thread: threadId });
              break;
            case 'node.started':
              onEvent?.({ type: 'node', node: String(data.node), status: 'running' });
              break;
            case 'node.finished':
              onEvent?.({
                type: 'node',
                node: String(data.node),
                status: data.status === 'failed' ? 'failed' : 'succeeded',
                error: str(data.error),
                durationMs: num(data.duration_ms) ?? undefined,
              });
              break;
            case 'llm.token':
              onEvent?.({ type: 'token', node: String(data.node), text: str(data.text) ?? '' });
              break;
            case 'memory.warning':
              onEvent?.({ type: 'warning', warning: { node: str(data.node) ?? null, message: str(data.message) ?? 'warning' } });
              break;
            case 'run.finished':
              await reader.cancel().catch(() => {});
              return {
                run: num(data.run) ?? run ?? 0,
                thread: threadId ?? 0,
                reply: str(data.reply) ?? '',
                warnings: Array.isArray(data.warnings) ? (data.warnings as RunWarning[]) : [],
              };
            case 'run.failed':
              await reader.cancel().catch(() => {});
              throw new TurnFailedError(str(data.error) || 'The run failed.', num(data.run) ?? run);
            case 'error':
              await reader.cancel().catch(() => {});
              throw new TurnFailedError(str(data.message) || 'The turn could not run.', num(data.run) ?? run);
          }
        }
      }
      throw new TurnFailedError('The connection closed before the turn finished.', run);
    },
  };
}
