// The chat view: a log of messages, suggested questions, a composer and a "new conversation"
// button, driven by a Transport. Vanilla DOM; text is only ever set as text, never as HTML.

import type { KnownServerEvent, ServerEvent, Status, Theme, Transport } from './protocol';
import { Conversation, lengthProblem, lookupText, type Message } from './state';
import { adoptStyles } from './styles';

// Refusals of who the page says the visitor is (data-participant and its signature).
const IDENTITY_REFUSED = new Set(['unsigned_participant', 'bad_signature', 'bad_participant', 'bad_visitor']);

export interface ChatOptions {
  transport: Transport;
  theme?: Theme;
  /** localStorage key that keeps the thread across reloads; null: do not keep it. */
  storageKey?: string | null;
  /** The longest message the server takes, in characters (the widget's: 4000). */
  maxLength?: number;
  /** Render inside a shadow root of its own (default), isolated from the page's styles. */
  shadow?: boolean;
  /** Show a close button that calls this. */
  onClose?: () => void;
  /** The server's theme defaults arrived (the widget socket sends them). */
  onReady?: (theme: Theme) => void;
  onThread?: (thread: string | null) => void;
  /** Every event the transport delivers, before the chat handles it (e.g. the editor lights up
   * nodes on ``node.started`` / ``node.finished``). */
  onEvent?: (event: ServerEvent) => void;
}

export interface ChatHandle {
  send(text: string): void;
  newConversation(): void;
  setTheme(theme: Theme): void;
  focus(): void;
  /** Show a refusal (e.g. this page's origin is not allowed) and disable the composer. */
  disable(message: string): void;
  readonly thread: string | null;
  readonly titleId: string;
  destroy(): void;
}

let instances = 0;
export const WIDGET_MAX_MESSAGE = 4000; // widget/services.py MAX_MESSAGE_CHARS

const storage = {
  get(key: string | null | undefined): string | null {
    try {
      return key ? localStorage.getItem(key) : null;
    } catch {
      return null;
    }
  },
  set(key: string | null | undefined, value: string | null) {
    try {
      if (key && value) localStorage.setItem(key, value);
      else if (key) localStorage.removeItem(key);
    } catch {
      /* storage blocked: the conversation lasts as long as the page */
    }
  },
};

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function newId(): string {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

export function mountChat(element: HTMLElement, options: ChatOptions): ChatHandle {
  const n = ++instances;
  const titleId = `skein-title-${n}`;
  let root: HTMLElement | ShadowRoot = element;
  if (options.shadow !== false) {
    const host = el('div');
    element.appendChild(host);
    root = host.attachShadow({ mode: 'open' });
    adoptStyles(root);
  }
  let theme: Theme = { ...options.theme };
  const state = new Conversation();
  state.thread = storage.get(options.storageKey);
  let online = false;
  let everOnline = false;
  let disabled = '';

  // --- the DOM ---
  const chat = el('section', { class: 'chat', 'aria-labelledby': titleId });
  const header = el('header');
  const title = el('h2', { id: titleId });
  const fresh = el('button', { type: 'button', class: 'icon', 'aria-label': 'New conversation', title: 'New conversation' }, '↻');
  header.append(title, fresh);
  if (options.onClose) {
    const close = el('button', { type: 'button', class: 'icon', 'aria-label': 'Close chat', title: 'Close' }, '×');
    close.onclick = () => options.onClose?.();
    header.append(close);
  }
  const log = el('div', { class: 'log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation', tabindex: '0' });
  const welcome = el('div', { class: 'msg assistant welcome' });
  const starters = el('div', { class: 'starters', role: 'group', 'aria-label': 'Suggested questions' });
  const status = el('p', { class: 'status', role: 'status' });
  const form = el('form', { class: 'composer' });
  const inputId = `skein-input-${n}`;
  const label = el('label', { for: inputId, class: 'sr' }, 'Message');
  const limitId = `skein-limit-${n}`;
  const input = el('textarea', { id: inputId, rows: '1', dir: 'auto', 'aria-describedby': limitId });
  const sendButton = el('button', { type: 'submit', class: 'send', 'aria-label': 'Send' }, '➤');
  const limit = el('p', { id: limitId, class: 'limit', role: 'alert' });
  const maxLength = options.maxLength ?? WIDGET_MAX_MESSAGE;
  form.append(label, input, sendButton);
  chat.append(header, log, starters, status, limit, form);
  root.appendChild(chat);
  const bubbles = new Map<number, HTMLElement>();

  // --- rendering ---
  function applyTheme() {
    title.textContent = theme.title || 'Chat';
    input.placeholder = theme.placeholder || 'Type a message…';
    welcome.textContent = theme.welcome || '';
    renderAll();
  }

  function bubble(message: Message): HTMLElement {
    let node = bubbles.get(message.id);
    if (!node) {
      // dir="auto": a right-to-left message reads right to left, whatever the page's direction. The
      // speaker and the cut note have a direction of their own, so only the message's text decides.
      node = el('div', { dir: 'auto' });
      node.append(
        el('span', { class: 'sr', dir: 'auto' }),
        el('span', { class: 'text' }),
        el('span', { class: 'lookup', 'data-testid': 'chat-lookup' }),
        el('span', { class: 'cut-note', dir: 'ltr' }),
      );
      bubbles.set(message.id, node);
    }
    node.dataset.testid = `chat-${message.role}`;
    node.className = `msg ${message.role}${message.streaming ? ' streaming' : ''}${message.unsent ? ' unsent' : ''}${message.cut ? ' cut' : ''}`;
    node.setAttribute('aria-busy', message.streaming ? 'true' : 'false');
    const [speaker, text, lookup, cutNote] = node.children as unknown as HTMLElement[];
    speaker.textContent = message.role === 'user' ? 'You: ' : message.role === 'error' ? 'Error: ' : `${theme.title || 'Assistant'}: `;
    text.textContent = message.content;
    if (message.summarizing && !message.content) {
      // Said rather than a silent wait: summarizing can take a while with a small local model.
      text.textContent = 'Summarizing earlier messages…';
      node.classList.add('summarizing');
    }
    // The tool's name only: what it was asked and what it answered stay the owner's.
    lookup.textContent = lookupText(message) ?? '';
    lookup.hidden = !lookup.textContent;
    cutNote.textContent = message.cut ? 'Cut short: the reply reached its length limit.' : '';
    cutNote.hidden = !message.cut;
    return node;
  }

  function keepScrolled(change: () => void) {
    const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    change();
    if (nearBottom) log.scrollTop = log.scrollHeight;
  }

  function renderAll() {
    keepScrolled(renderLog);
  }

  function renderLog() {
    const wanted: Node[] = theme.welcome ? [welcome] : [];
    const live = new Set<number>();
    for (const message of state.messages) {
      live.add(message.id);
      wanted.push(bubble(message));
    }
    for (const id of [...bubbles.keys()]) if (!live.has(id)) bubbles.delete(id);
    // Move only what is out of place, so a screen reader announces only new messages.
    wanted.forEach((node, index) => {
      if (log.childNodes[index] !== node) log.insertBefore(node, log.childNodes[index] ?? null);
    });
    while (log.childNodes.length > wanted.length) log.lastChild?.remove();

    starters.replaceChildren();
    if (!state.messages.length && !disabled) {
      for (const question of theme.starters ?? []) {
        const button = el('button', { type: 'button', class: 'starter' }, question);
        button.onclick = () => send(question);
        starters.append(button);
      }
    }
    input.disabled = !!disabled;
    fresh.disabled = !!disabled;
    renderComposer();
  }

  /** The send button, and what the composer says of a message over the limit. */
  function renderComposer() {
    const tooLong = lengthProblem(input.value.trim(), maxLength);
    limit.textContent = tooLong ?? '';
    limit.hidden = !tooLong;
    input.setAttribute('aria-invalid', tooLong ? 'true' : 'false');
    sendButton.disabled = state.busy() || !!disabled || !!tooLong;
  }

  function setStatus(text: string) {
    status.textContent = text;
    status.hidden = !text;
  }

  // --- talking to the server ---
  function setThread(thread: string | null) {
    state.thread = thread;
    storage.set(options.storageKey, thread);
    options.onThread?.(thread);
  }

  /** Send a message on this connection, once: a history that arrives meanwhile must not send it
   * again (the owner's stream has no client id to drop a duplicate by). */
  function transmit(message: Message) {
    if (!online || message.transmitted) return;
    message.transmitted = true;
    options.transport.send({ text: message.content, thread: state.thread, clientId: message.clientId as string });
  }

  function resendUnsent() {
    for (const message of state.unsent()) transmit(message);
  }

  function send(text: string) {
    text = text.trim();
    if (!text || state.busy() || disabled || lengthProblem(text, maxLength)) return;
    const message = state.addUser(text, newId());
    renderAll();
    transmit(message);
  }

  function onStatus(value: Status, detail?: string) {
    // A connection lost before the server acknowledged a message may have lost the message too.
    if (online && value !== 'online') for (const message of state.unsent()) message.transmitted = false;
    online = value === 'online';
    if (value === 'closed') return disable(detail || 'The chat is not available.');
    if (value === 'online') {
      setStatus('');
      if (everOnline) state.markStreamsStale(); // tokens sent while we were away are gone
      everOnline = true;
      // Catch up first; unsent messages go out once the history shows what arrived.
      if (state.thread) options.transport.sync(state.thread, state.lastSeq());
      else resendUnsent();
    } else setStatus(value === 'connecting' ? 'Connecting…' : 'Connection lost. Reconnecting…');
    renderAll();
  }

  function onEvent(received: ServerEvent) {
    options.onEvent?.(received);
    // An event of a type not listed in KnownServerEvent goes to `default`.
    const event = received as KnownServerEvent;
    switch (event.type) {
      case 'ready':
        options.onReady?.(event.data.theme ?? {});
        return;
      case 'thread.created':
        setThread(event.data.thread);
        return;
      case 'accepted':
        if (!state.thread && event.data.thread) setThread(String(event.data.thread));
        state.accepted(event.data.run, event.data.client_id);
        break;
      case 'history':
        if ((event.data.thread ?? null) !== state.thread) return; // an answer about a conversation left since
        state.merge(event.data.messages, event.data.pending);
        // A long conversation comes in pages (each fits one WebSocket frame): ask for the next.
        if (event.data.more) options.transport.sync(state.thread, state.lastSeq());
        else resendUnsent();
        break;
      case 'memory.summarizing':
      case 'memory.summarized':
      case 'memory.warning': {
        const message = state.summarizing(event.data.run, event.type === 'memory.summarizing');
        if (message) keepScrolled(() => bubble(message));
        return;
      }
      case 'tool.started':
      case 'tool.finished': {
        const { run, call_id: callId, tool } = event.data;
        const message = event.type === 'tool.started' ? state.toolStarted(run, callId, tool) : state.toolFinished(run, callId);
        if (message) keepScrolled(() => bubble(message));
        return;
      }
      case 'llm.token': {
        const message = state.token(event.data.run, event.data.node, event.data.text);
        if (message) keepScrolled(() => bubble(message));
        return;
      }
      case 'run.finished':
      case 'run.failed':
        if (state.isMine(event.data.run)) {
          if (event.type === 'run.finished') state.finished(event.data.run, event.data.reply, event.data.cut === true);
          else state.failed(event.data.run, event.data.error);
        }
        options.transport.sync(state.thread, state.lastSeq()); // learn the stored seqs (and other tabs' turns)
        break;
      case 'error': {
        const data = event.data;
        if (data.code === 'unknown_thread') {
          const unsent = state.unsent();
          state.reset();
          setThread(null);
          state.messages.push(...unsent);
          resendUnsent();
          setStatus('That conversation has expired; this is a new one.');
        } else if (IDENTITY_REFUSED.has(String(data.code))) {
          // The page named its user with an id the server does not accept: nothing can be sent.
          disable(`This chat cannot start: ${data.message}`);
          return;
        } else if (data.client_id) state.refused(data.client_id, data.message);
        else setStatus(data.message);
        break;
      }
      default:
        return;
    }
    renderAll();
  }

  function disable(message: string) {
    disabled = message;
    setStatus(message);
    renderAll();
  }

  // --- wiring ---
  form.onsubmit = (event) => {
    event.preventDefault();
    const text = input.value;
    if (!text.trim() || state.busy() || disabled || lengthProblem(text.trim(), maxLength)) return;
    input.value = '';
    send(text);
  };
  input.oninput = renderComposer;
  input.onkeydown = (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  };
  fresh.onclick = () => handle.newConversation();

  const handle: ChatHandle = {
    send,
    newConversation() {
      state.reset();
      setThread(null);
      options.transport.sync(null, 0);
      setStatus('');
      renderAll();
      input.focus();
    },
    setTheme(value) {
      theme = { ...value };
      applyTheme();
    },
    focus: () => input.focus(),
    disable,
    get thread() {
      return state.thread;
    },
    titleId,
    destroy() {
      options.transport.stop();
      chat.remove();
    },
  };
  applyTheme();
  setStatus('');
  options.transport.start({ event: onEvent, status: onStatus });
  return handle;
}
