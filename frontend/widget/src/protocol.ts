// The chat protocol shared by the transports and the chat view (docs/streaming.md).

export interface Theme {
  title?: string;
  welcome?: string;
  placeholder?: string;
  color?: string;
  text_color?: string;
  background?: string;
  position?: 'left' | 'right';
  starters?: string[];
}

export interface HistoryMessage {
  seq: number;
  role: 'user' | 'assistant';
  content: string;
  run?: number | null;
  client_id?: string | null;
}

/** The events the chat view reads (docs/streaming.md). */
export type KnownServerEvent =
  | { type: 'ready'; data: { key: string; name: string; theme: Theme } }
  | { type: 'thread.created'; data: { thread: string } }
  | { type: 'accepted'; data: { run: number; client_id?: string | null; thread?: string | number | null } }
  | { type: 'history'; data: { thread: string | null; messages: HistoryMessage[]; pending: number | null; more?: boolean } }
  | { type: 'run.started'; data: { run: number } }
  | { type: 'llm.token'; data: { run: number; node: string; text: string } }
  | { type: 'memory.summarizing' | 'memory.summarized' | 'memory.warning'; data: { run: number } }
  // An agent's call of a tool: its name only (never its arguments or result).
  | { type: 'tool.started' | 'tool.finished'; data: { run: number; tool: string; call_id: string; status?: string } }
  | { type: 'run.finished'; data: { run: number; reply: string; cut?: boolean } }
  | { type: 'run.failed'; data: { run: number; error: string } }
  | { type: 'error'; data: { code: string; message: string; retry_after?: number; client_id?: string; errors?: { node: string | null; field: string | null; message: string }[] } };

/** Any event a server sends: the known ones, and others (the owner's stream tells more). */
export type ServerEvent = KnownServerEvent | { type: string; data: Record<string, unknown> };

export type Status = 'connecting' | 'online' | 'offline' | 'closed';

export interface TransportListener {
  event(event: ServerEvent): void;
  status(status: Status, detail?: string): void;
}

/** How the chat view talks to a server. ``thread`` is an opaque string (a widget token, or a
 * thread id for the owner's stream). */
export interface Transport {
  start(listener: TransportListener): void;
  send(message: { text: string; thread: string | null; clientId: string }): void;
  /** Subscribe to ``thread`` and answer with a ``history`` event of its messages after ``after``. */
  sync(thread: string | null, after: number): void;
  stop(): void;
}
