// The chat UI: messages, warnings, links to each turn's trace. Transport-agnostic.
import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent, type ReactNode } from 'react';
import type { ChatReply, RunWarning } from '../api/types';
import type { ChatEvent, ChatTransport } from './transport';

export interface ChatMessage {
  role: 'user' | 'assistant' | 'error';
  content: string;
  run?: number;
  warnings?: RunWarning[];
}

interface ChatPanelProps {
  transport: ChatTransport;
  /** Runs before each send (e.g. save the draft); returning false cancels the send. */
  beforeSend?: () => Promise<boolean>;
  onTurnStart?: () => void;
  onReply?: (reply: ChatReply) => void;
  /** Live progress from transports that stream (nodes starting and finishing, tokens, warnings). */
  onEvent?: (event: ChatEvent) => void;
  onFailure?: (error: Error) => void;
  /** Link to a turn's run trace / the thread's memory. */
  renderRunLink?: (runId: number) => ReactNode;
  renderThreadLinks?: (threadId: number) => ReactNode;
  placeholder?: string;
  emptyHint?: ReactNode;
}

export function ChatPanel({ transport, beforeSend, onTurnStart, onReply, onEvent, onFailure, renderRunLink, renderThreadLinks, placeholder, emptyHint }: ChatPanelProps) {
  const [messages, setMessages] = useState<ChatMessage[]>([]);
  const [thread, setThread] = useState<number | null>(null);
  const [draft, setDraft] = useState('');
  const [busy, setBusy] = useState(false);
  /** The reply as it streams in: the tokens of the node currently speaking. */
  const [live, setLive] = useState<{ node: string; text: string } | null>(null);
  const listRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    listRef.current?.scrollTo({ top: listRef.current.scrollHeight });
  }, [messages, busy, live]);

  const handleEvent = (event: ChatEvent) => {
    if (event.type === 'accepted' && event.thread) setThread(event.thread);
    if (event.type === 'token') setLive((l) => (l && l.node === event.node ? { node: l.node, text: l.text + event.text } : { node: event.node, text: event.text }));
    onEvent?.(event);
  };

  const send = async (event?: FormEvent) => {
    event?.preventDefault();
    const text = draft.trim();
    if (!text || busy) return;
    setBusy(true);
    try {
      if (beforeSend && !(await beforeSend())) return;
      setDraft('');
      setMessages((m) => [...m, { role: 'user', content: text }]);
      onTurnStart?.();
      const reply = await transport.send(text, { thread, onEvent: handleEvent });
      setThread(reply.thread ?? thread);
      setMessages((m) => [...m, { role: 'assistant', content: reply.reply, run: reply.run, warnings: reply.warnings }]);
      onReply?.(reply);
    } catch (error) {
      const run = (error as { run?: unknown }).run;
      setMessages((m) => [...m, { role: 'error', content: (error as Error).message, run: typeof run === 'number' ? run : undefined }]);
      onFailure?.(error as Error);
    } finally {
      setBusy(false);
      setLive(null);
    }
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey) void send(event);
  };

  return (
    <div className="chat-panel">
      <div className="chat-toolbar">
        <span className="muted small">{thread ? <>Thread #{thread}{renderThreadLinks?.(thread)}</> : 'Testing the current draft'}</span>
        <button
          className="btn btn-ghost btn-sm"
          disabled={busy || messages.length === 0}
          onClick={() => {
            setMessages([]);
            setThread(null);
          }}
        >
          New conversation
        </button>
      </div>
      <div className="chat-messages" ref={listRef} aria-live="polite" data-testid="chat-messages">
        {messages.length === 0 && <div className="chat-empty">{emptyHint ?? 'Send a message to test your workflow.'}</div>}
        {messages.map((m, i) => (
          <div key={i} className={`chat-msg chat-${m.role}`} data-testid={`chat-${m.role}`}>
            <div className="chat-bubble">{m.content || <span className="muted">(empty reply)</span>}</div>
            {m.warnings?.map((w, j) => (
              <div key={j} className="chat-warning" data-testid="chat-warning">
                ⚠ {w.node ? <b>{w.node}: </b> : null}
                {w.message}
              </div>
            ))}
            {m.run !== undefined && renderRunLink && <div className="chat-meta">{renderRunLink(m.run)}</div>}
          </div>
        ))}
        {busy && live && (
          <div className="chat-msg chat-assistant chat-streaming" data-testid="chat-streaming">
            <div className="chat-bubble">{live.text}</div>
          </div>
        )}
        {busy && !live && (
          <div className="chat-msg chat-assistant chat-typing" aria-label="Waiting for the reply">
            <div className="chat-bubble"><span /><span /><span /></div>
          </div>
        )}
      </div>
      <form className="chat-input" onSubmit={send}>
        <textarea
          rows={2}
          value={draft}
          placeholder={placeholder ?? 'Type a message… (Enter to send, Shift+Enter for a new line)'}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={onKeyDown}
          aria-label="Message"
        />
        <button className="btn btn-primary" type="submit" disabled={busy || !draft.trim()}>
          Send
        </button>
      </form>
    </div>
  );
}
