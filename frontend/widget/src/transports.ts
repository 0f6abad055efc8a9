// Transports: the widget's WebSocket (published version, anonymous) and the owner's SSE stream
// (the editor's test chat against the draft; any version with a session or an API token).

import type { HistoryMessage, ServerEvent, Status, Theme, Transport, TransportListener } from './protocol';

const FATAL_CLOSE: Record<number, string> = {
  4403: 'This site is not allowed to use this chat widget.',
  4404: 'This chat widget does not exist.',
  4409: 'This chatbot is not published yet.',
};
const PING_MS = 20_000;
const PONG_TIMEOUT_MS = 10_000;

export type WidgetConfig = { key: string; name: string; theme: Theme };

/** What a refused request answers (DRF: `detail`; a workflow's problems: `errors`). */
type ErrorBody = { detail?: string; errors?: { node: string | null; field: string | null; message: string }[] };

/** A run as `GET /api/runs/{id}/` answers, as far as a pending turn's ending needs it. */
type RunBody = { status?: string; output?: string; error?: string; warnings?: unknown[]; steps?: { type?: string; details?: { cut?: boolean } }[] };
export type ConfigResult = { ok: true; config: WidgetConfig } | { ok: false; fatal: boolean; message: string };

/** The widget's public config; ``fatal`` when the server refuses this page (origin, key, not published). */
export async function fetchConfig(base: string, key: string): Promise<ConfigResult> {
  try {
    const response = await fetch(`${base}/api/widget/${encodeURIComponent(key)}/`, { credentials: 'omit' });
    const body = (await response.json().catch(() => ({}))) as Partial<WidgetConfig> & ErrorBody;
    if (response.ok) return { ok: true, config: body as WidgetConfig };
    return { ok: false, fatal: response.status < 500, message: body.detail || `The chat service answered ${response.status}.` };
  } catch {
    return { ok: false, fatal: false, message: 'The chat service cannot be reached.' };
  }
}

/** Who the visitor is: the embedding site's signed id, or the widget's anonymous id for this browser. */
export type Identity = { participant: string; signature: string } | { visitor: string };

const VISITOR_ID = /^[A-Za-z0-9_-]{16,64}$/;

/** This browser's anonymous visitor id for a widget, made once and kept in localStorage (a page
 * without storage gets one per page load). Unguessable: it is the visitor's key to their memory. */
export function visitorId(key: string, storage: Pick<Storage, 'getItem' | 'setItem'> | null = safeStorage()): string {
  const name = `skein:visitor:${key}`;
  const stored = storage?.getItem(name);
  if (stored && VISITOR_ID.test(stored)) return stored;
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  const id = btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  try {
    storage?.setItem(name, id);
  } catch {
    /* storage full or refused: this page load keeps the id */
  }
  return id;
}

function safeStorage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

/** ``WS /ws/widget/{key}/``: reconnects with backoff, pings to notice dead connections. Every
 * message and sync says who the visitor is (``identity``), so their memory follows them. */
export function widgetTransport(options: { base: string; key: string; identity?: Identity }): Transport {
  const url = `${options.base.replace(/^http/, 'ws')}/ws/widget/${encodeURIComponent(options.key)}/`;
  let listener: TransportListener;
  let socket: WebSocket | null = null;
  let stopped = false;
  let failures = 0;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let ping: ReturnType<typeof setInterval> | undefined;
  let pong: ReturnType<typeof setTimeout> | undefined;

  const status = (value: Status, detail?: string) => listener.status(value, detail);
  const write = (message: object) => {
    if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  };
  const reconnectNow = () => {
    if (!stopped && !socket) {
      clearTimeout(retry);
      connect();
    }
  };

  function connect() {
    status(failures ? 'offline' : 'connecting');
    const ws = new WebSocket(url);
    let opened = false;
    socket = ws;
    ws.onopen = () => {
      opened = true;
      failures = 0;
      ping = setInterval(() => {
        write({ type: 'ping' });
        pong = pong ?? setTimeout(() => ws.close(), PONG_TIMEOUT_MS);
      }, PING_MS);
      status('online');
    };
    ws.onmessage = (message) => {
      let event: ServerEvent;
      try {
        event = JSON.parse(message.data as string) as ServerEvent;
      } catch {
        return;
      }
      if (event.type === 'pong') {
        clearTimeout(pong);
        pong = undefined;
      } else listener.event(event);
    };
    ws.onclose = async (close) => {
      clearInterval(ping);
      clearTimeout(pong);
      pong = undefined;
      socket = null;
      if (stopped) return;
      if (FATAL_CLOSE[close.code]) {
        stopped = true;
        status('closed', FATAL_CLOSE[close.code]);
        return;
      }
      if (!opened) {
        // A refused handshake looks like a network error to a page: ask the server why.
        const check = await fetchConfig(options.base, options.key);
        if (!check.ok && check.fatal) {
          stopped = true;
          status('closed', check.message);
          return;
        }
      }
      failures += 1;
      status('offline');
      const delay = Math.min(10_000, 500 * 2 ** Math.min(failures - 1, 5)) * (0.75 + Math.random() / 2);
      retry = setTimeout(connect, delay);
    };
  }

  return {
    start(value) {
      listener = value;
      addEventListener('online', reconnectNow);
      connect();
    },
    send({ text, thread, clientId }) {
      write({ type: 'message', text, thread, client_id: clientId, ...options.identity });
    },
    sync(thread, after) {
      write({ type: 'sync', thread, after, ...options.identity });
    },
    stop() {
      stopped = true;
      clearTimeout(retry);
      removeEventListener('online', reconnectNow);
      socket?.close(1000);
    },
  };
}

export interface StreamOptions {
  /** ``/api/workflows/{id}/chat/stream/`` */
  url: string;
  /** The transcript of a thread: ``(thread) => `/api/threads/${thread}/messages/` `` */
  messagesUrl: (thread: string) => string;
  /** e.g. ``() => ({ 'X-CSRFToken': token })`` with the session, or ``{ Authorization: 'Token …' }`` */
  headers?: () => Record<string, string>;
  /** Extra body fields, e.g. ``{ version: 'published' }`` (default: the draft). */
  body?: Record<string, unknown>;
  /** A run: ``(run) => `/api/runs/${run}/` ``. With it, a conversation loaded while its last turn
   * still runs (a reload mid-turn) gets that turn's reply when it ends, as the widget does. */
  runUrl?: (run: number) => string;
}

const PENDING_POLL_MS = 2000;
const PENDING_POLL_LIMIT = 300; // 10 minutes: past any turn's own bound

/** ``POST …/chat/stream/`` (Server-Sent Events over fetch) for the owner: threads are ids. */
export function streamTransport(options: StreamOptions): Transport {
  let listener: TransportListener;
  const aborts = new Set<AbortController>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  // DRF negotiates on Accept: errors before the stream starts come back as JSON.
  const headers = () => ({ 'Content-Type': 'application/json', Accept: 'text/event-stream, application/json', ...(options.headers?.() ?? {}) });
  const emit = (event: ServerEvent) => listener.event(event);
  const fail = (message: string, clientId?: string, code = 'failed', errors?: unknown[]) =>
    emit({ type: 'error', data: { code, message, client_id: clientId, ...(errors ? { errors } : {}) } });

  async function request(url: string, init: RequestInit): Promise<Response | null> {
    const abort = new AbortController();
    aborts.add(abort);
    try {
      return await fetch(url, { credentials: 'same-origin', ...init, signal: abort.signal });
    } catch {
      return null;
    } finally {
      aborts.delete(abort);
    }
  }

  async function send({ text, thread, clientId }: { text: string; thread: string | null; clientId: string }) {
    const response = await request(options.url, {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({ ...options.body, message: text, thread: thread ? Number(thread) : null }),
    });
    if (!response) return fail('The server cannot be reached.', clientId);
    if (!response.ok || !response.body) {
      const body = (await response.json().catch(() => ({}))) as ErrorBody;
      const detail = body.errors?.map((e) => e.message).join('; ') || body.detail || `HTTP ${response.status}`;
      return fail(detail, clientId, `http_${response.status}`, Array.isArray(body.errors) ? body.errors : undefined);
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) break;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const type = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (!type || !data) continue;
        const payload = JSON.parse(data) as Record<string, unknown>;
        if (type === 'accepted') {
          const { run, thread: id } = payload as { run: number; thread: number };
          if (!thread) emit({ type: 'thread.created', data: { thread: String(id) } });
          emit({ type: 'accepted', data: { run, client_id: clientId, thread: String(id) } });
        } else if (type === 'error') {
          const { message, code } = payload as { message: string; code: string };
          fail(message, clientId, code);
        } else emit({ type, data: payload });
      }
    }
  }

  async function sync(thread: string | null, after: number) {
    if (!thread) return emit({ type: 'history', data: { thread: null, messages: [], pending: null } });
    const response = await request(options.messagesUrl(thread), { headers: headers() });
    if (!response?.ok) return fail('This conversation cannot be loaded.', undefined, response?.status === 404 ? 'unknown_thread' : 'failed');
    const all = (await response.json()) as HistoryMessage[];
    const last = all[all.length - 1];
    // A user message with no reply yet: its turn is still running (the page was reloaded mid-turn).
    const pending = options.runUrl && last?.role === 'user' && last.run ? last.run : null;
    emit({ type: 'history', data: { thread, messages: all.filter((m) => m.seq > after), pending } });
    if (pending) later(() => void awaitRun(thread, pending, 1));
  }

  /** Reads the pending run until it ends, then tells its ending like the stream would have. */
  async function awaitRun(thread: string, run: number, attempt: number) {
    const response = await request(options.runUrl!(run), { headers: headers() });
    const body = response?.ok ? ((await response.json().catch(() => null)) as RunBody | null) : null;
    if (body?.status === 'succeeded') {
      const cut = Array.isArray(body.steps) && body.steps.some((s) => s.type === 'output' && s.details?.cut);
      emit({ type: 'run.finished', data: { run, reply: body.output ?? '', warnings: body.warnings ?? [], cut } });
    }
    else if (body?.status === 'failed') emit({ type: 'run.failed', data: { run, error: body.error || 'The turn failed.' } });
    else if (attempt < PENDING_POLL_LIMIT) later(() => void awaitRun(thread, run, attempt + 1));
  }

  function later(callback: () => void) {
    const timer = setTimeout(() => {
      timers.delete(timer);
      callback();
    }, PENDING_POLL_MS);
    timers.add(timer);
  }

  return {
    start(value) {
      listener = value;
      listener.status('online');
    },
    send: (message) => void send(message),
    sync: (thread, after) => void sync(thread, after),
    stop() {
      aborts.forEach((abort) => abort.abort());
      timers.forEach((timer) => clearTimeout(timer));
      timers.clear();
    },
  };
}
