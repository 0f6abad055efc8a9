// A conversation as the widget shows it: pure state, no DOM, so the merge rules are testable.
//
// Messages the server stored carry a ``seq``; the visitor's own message is shown at once (with its
// ``clientId``) and the reply streams into a placeholder tied to the run. History from the server
// is merged by seq, by (run, role) and by client id, so a message is never shown twice, whatever
// arrives twice (history and event) after a reconnect.

import type { HistoryMessage } from './protocol';

export interface Message {
  id: number; // stable DOM identity
  role: 'user' | 'assistant' | 'error';
  content: string;
  seq?: number;
  run?: number;
  clientId?: string;
  node?: string; // the node whose tokens are streaming in
  streaming?: boolean; // the reply is being written
  stale?: boolean; // tokens were missed while offline: wait for the final reply
  unsent?: boolean; // not acknowledged by the server yet
  transmitted?: boolean; // sent on the current connection (an unsent message is sent again after a reconnect)
  summarizing?: boolean; // earlier messages are being summarized before the model answers
  cut?: boolean; // the reply stopped at the model's length limit (max_tokens): it ends mid-answer
  lookups?: { callId: string; tool: string }[]; // the tools the agent is calling before it answers
}

/** What the reply says while its agent calls tools ("Looking up lookup_order…"), or null. */
export function lookupText(message: Message): string | null {
  const tools = [...new Set((message.lookups ?? []).map((l) => l.tool))];
  return tools.length ? `Looking up ${tools.join(', ')}…` : null;
}

/** What the composer says about a draft message: nothing, or that it is over the limit (it is
 * never cut silently; sending waits until it fits). */
export function lengthProblem(text: string, limit: number): string | null {
  const length = [...text].length;
  return length > limit ? `${length.toLocaleString('en')} characters: the limit is ${limit.toLocaleString('en')}. Shorten the message to send it.` : null;
}

let ids = 0;

export class Conversation {
  thread: string | null = null;
  messages: Message[] = [];

  lastSeq(): number {
    return this.messages.reduce((max, m) => Math.max(max, m.seq ?? 0), 0);
  }

  unsent(): Message[] {
    return this.messages.filter((m) => m.unsent);
  }

  busy(): boolean {
    return this.messages.some((m) => m.unsent || m.streaming);
  }

  reset(thread: string | null = null): void {
    this.thread = thread;
    this.messages = [];
  }

  addUser(text: string, clientId: string): Message {
    const message: Message = { id: ++ids, role: 'user', content: text, clientId, unsent: true };
    this.messages.push(message);
    return message;
  }

  accepted(run: number, clientId?: string | null): void {
    const user = this.messages.find((m) => m.role === 'user' && ((clientId && m.clientId === clientId) || m.run === run));
    if (user) {
      user.run = run;
      user.unsent = false;
    }
    this.placeholder(run);
  }

  /** The reply bubble of a run, created when needed. */
  placeholder(run: number, stale = false): Message {
    let reply = this.messages.find((m) => m.run === run && m.role !== 'user');
    if (!reply) {
      reply = { id: ++ids, role: 'assistant', content: '', run, streaming: true, stale };
      this.messages.push(reply);
      this.sort();
    }
    return reply;
  }

  isMine(run: number): boolean {
    return this.messages.some((m) => m.run === run);
  }

  /** The memory is summarizing earlier messages for this run (``on``), or is done with it. */
  summarizing(run: number, on: boolean): Message | undefined {
    if (!this.isMine(run)) return undefined;
    const reply = this.placeholder(run);
    if (!reply.streaming) return undefined;
    reply.summarizing = on;
    return reply;
  }

  /** The run's agent called a tool (``tool.started``): the reply says so until the call ends. */
  toolStarted(run: number, callId: string, tool: string): Message | undefined {
    if (!this.isMine(run)) return undefined;
    const reply = this.placeholder(run);
    if (!reply.streaming) return undefined;
    reply.lookups = [...(reply.lookups ?? []), { callId, tool }];
    return reply;
  }

  toolFinished(run: number, callId: string): Message | undefined {
    const reply = this.messages.find((m) => m.run === run && m.role === 'assistant');
    const at = reply?.lookups?.findIndex((l) => l.callId === callId) ?? -1;
    if (!reply || at < 0) return undefined;
    reply.lookups = reply.lookups?.filter((_, i) => i !== at);
    return reply;
  }

  token(run: number, node: string, text: string): Message | undefined {
    const reply = this.messages.find((m) => m.run === run && m.role === 'assistant');
    if (!reply || !reply.streaming || reply.stale) return undefined;
    reply.summarizing = false;
    if (reply.node !== undefined && reply.node !== node) reply.content = ''; // a later model writes the reply
    reply.node = node;
    reply.content += text;
    return reply;
  }

  finished(run: number, reply: string, cut = false): void {
    const message = this.placeholder(run);
    Object.assign(message, { role: 'assistant', content: reply, streaming: false, stale: false, summarizing: false, lookups: undefined, cut: cut || message.cut });
  }

  failed(run: number, error: string): void {
    const message = this.placeholder(run);
    Object.assign(message, { role: 'error', content: error, streaming: false, stale: false, summarizing: false, lookups: undefined });
  }

  /** A message that could not be sent: shown as an error after it; it will not be resent. */
  refused(clientId: string | undefined, error: string): void {
    const user = clientId ? this.messages.find((m) => m.clientId === clientId && m.unsent) : undefined;
    if (user) user.unsent = false;
    this.messages.push({ id: ++ids, role: 'error', content: error });
  }

  /** After a reconnect: replies still streaming missed their tokens meanwhile. */
  markStreamsStale(): void {
    // A call that ended meanwhile sent its end then: no notice is left waiting for it.
    for (const m of this.messages) if (m.streaming) Object.assign(m, { stale: true, lookups: undefined });
  }

  merge(history: HistoryMessage[], pending: number | null): void {
    for (const item of history) {
      const run = item.run ?? undefined;
      const existing = this.messages.find(
        (m) =>
          m.seq === item.seq ||
          (run !== undefined && m.run === run && (m.role === item.role || (item.role === 'assistant' && m.role === 'error'))) ||
          (item.client_id && m.role === 'user' && m.clientId === item.client_id),
      );
      if (existing) {
        Object.assign(existing, { role: item.role, content: item.content, seq: item.seq, run, streaming: false, stale: false, unsent: false, lookups: undefined });
      } else {
        this.messages.push({ id: ++ids, role: item.role, content: item.content, seq: item.seq, run, clientId: item.client_id ?? undefined });
      }
    }
    if (pending) this.placeholder(pending, true);
    this.sort();
  }

  /** Stored messages by seq; a reply without one right after its run's message; the rest last. */
  private sort(): void {
    const position = new Map<Message, number>();
    this.messages.forEach((m, index) => {
      let key = m.seq;
      if (key === undefined && m.run !== undefined) {
        const user = this.messages.find((u) => u.run === m.run && u.seq !== undefined);
        if (user) key = (user.seq as number) + 0.5;
      }
      position.set(m, (key ?? 1e9) * 1e4 + index);
    });
    this.messages.sort((a, b) => (position.get(a) as number) - (position.get(b) as number));
  }
}
