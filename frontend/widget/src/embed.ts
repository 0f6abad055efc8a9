// The script a site embeds:
//   <script src="https://skein.example/widget.js" data-key="wk_…" async></script>
// It adds a floating button that opens the chat panel. Optional attributes (they override the
// owner's defaults): data-title, data-welcome, data-placeholder, data-color, data-text-color,
// data-background, data-position ("left" | "right"), data-starters ("A|B|C" or a JSON array),
// data-open ("true": start open), data-host (the Skein server; default: where the script came from).
// A visitor is anonymous (one id per browser, kept in localStorage); a site that knows its logged-in
// user adds data-participant="<user id>" and data-participant-signature="<hex HMAC-SHA256 of the id
// with the widget's identity secret>", computed on its server, so the user's memory follows them.
//
// It also defines window.SkeinWidget = { mountChat, widgetTransport, streamTransport, fetchConfig,
// mount }, so other pages (the editor's test chat) can reuse the chat view with their own transport.

import { mountChat } from './chat';
import type { Theme } from './protocol';
import { adoptStyles } from './styles';
import { fetchConfig, streamTransport, visitorId, widgetTransport, type Identity } from './transports';

export { fetchConfig, mountChat, streamTransport, widgetTransport };
export type { ChatHandle, ChatOptions } from './chat';
export type { ServerEvent, Theme, Transport, TransportListener } from './protocol';

function themeFromAttributes(script: HTMLElement): Theme {
  const d = script.dataset;
  const theme: Theme = {};
  const text = { title: d.title, welcome: d.welcome, placeholder: d.placeholder } as const;
  for (const [name, value] of Object.entries(text)) if (value) theme[name as 'title'] = value;
  if (d.color) theme.color = d.color;
  if (d.textColor) theme.text_color = d.textColor;
  if (d.background) theme.background = d.background;
  if (d.position === 'left' || d.position === 'right') theme.position = d.position;
  if (d.starters) {
    let starters: unknown[];
    try {
      const parsed: unknown = d.starters.trim().startsWith('[') ? JSON.parse(d.starters) : d.starters.split('|');
      starters = Array.isArray(parsed) ? parsed : [d.starters];
    } catch {
      starters = [d.starters];
    }
    theme.starters = starters.map((s) => (typeof s === 'string' ? s : JSON.stringify(s)).trim()).filter(Boolean);
  }
  return theme;
}

const validColor = (value?: string) => !!value && CSS.supports('color', value);

/** The launcher's speech-bubble icon, drawn (an emoji shows as a box where no emoji font is installed). */
function chatIcon(): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('fill', 'currentColor');
  path.setAttribute('fill-rule', 'evenodd'); // the three dots are holes in the bubble
  path.setAttribute('d', 'M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm3 6.5a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01z');
  svg.append(path);
  return svg;
}

/** Mount the floating widget for ``key``; ``attributes`` win over the owner's theme. */
export function mount(options: { key: string; base: string; theme?: Theme; open?: boolean; participant?: string; signature?: string }) {
  const overrides = options.theme ?? {};
  const host = document.createElement('div');
  host.setAttribute('data-skein-widget', options.key);
  document.body.appendChild(host);
  const root = host.attachShadow({ mode: 'open' });
  adoptStyles(root);
  const launcher = document.createElement('button');
  launcher.className = 'launcher';
  launcher.type = 'button';
  launcher.append(chatIcon());
  launcher.setAttribute('aria-haspopup', 'dialog');
  launcher.setAttribute('aria-expanded', 'false');
  const panel = document.createElement('div');
  panel.className = 'panel';
  panel.id = 'skein-panel';
  panel.hidden = true;
  panel.setAttribute('role', 'dialog');
  panel.setAttribute('aria-modal', 'false');
  launcher.setAttribute('aria-controls', panel.id);
  root.append(panel, launcher);

  let isOpen = false;
  const open = (value: boolean) => {
    isOpen = value;
    panel.hidden = !value;
    launcher.setAttribute('aria-expanded', String(value));
    launcher.setAttribute('aria-label', value ? 'Close chat' : `Open chat: ${theme.title || 'Chat'}`);
    if (value) chat.focus();
    else launcher.focus();
  };
  let theme: Theme = { ...overrides };
  const apply = (defaults: Theme) => {
    theme = { ...defaults, ...overrides };
    for (const [property, value] of [
      ['--sk-accent', theme.color],
      ['--sk-on-accent', theme.text_color],
      ['--sk-bg', theme.background],
    ] as const) {
      if (validColor(value)) host.style.setProperty(property, value as string);
    }
    const side = theme.position === 'left' ? 'left' : 'right';
    launcher.className = `launcher ${side}`;
    panel.className = `panel ${side}`;
    launcher.setAttribute('aria-label', isOpen ? 'Close chat' : `Open chat: ${theme.title || 'Chat'}`);
    chat.setTheme(theme);
  };

  const identity: Identity = options.participant
    ? { participant: options.participant, signature: options.signature ?? '' }
    : { visitor: visitorId(options.key) };
  const transport = widgetTransport({ base: options.base, key: options.key, identity });
  let started = false;
  const chat = mountChat(panel, {
    transport: {
      ...transport,
      start(listener) {
        // Ask first whether this page may use the widget, so a refusal can say why.
        void fetchConfig(options.base, options.key).then((result) => {
          if (result.ok) apply(result.config.theme);
          else if (result.fatal) return chat.disable(result.message);
          started = true;
          transport.start(listener);
        });
      },
      stop: () => started && transport.stop(),
    },
    shadow: false,
    // A signed-in user's thread is theirs: another user on this browser starts their own.
    storageKey: options.participant ? `skein:thread:${options.key}:${options.participant}` : `skein:thread:${options.key}`,
    onClose: () => open(false),
    onReady: apply,
  });
  panel.setAttribute('aria-labelledby', chat.titleId);
  apply({});
  launcher.onclick = () => open(!isOpen);
  panel.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      event.stopPropagation();
      open(false);
    }
  });
  if (options.open) open(true);
  return { open: () => open(true), close: () => open(false), chat };
}

function autoMount() {
  const script =
    (document.currentScript as HTMLScriptElement | null) ??
    document.querySelector<HTMLScriptElement>('script[data-key][src*="widget.js"]');
  const key = script?.dataset.key;
  if (!script || !key || document.querySelector(`[data-skein-widget="${CSS.escape(key)}"]`)) return;
  const base = (script.dataset.host || new URL(script.src, location.href).origin).replace(/\/$/, '');
  const go = () =>
    mount({
      key, base, theme: themeFromAttributes(script), open: script.dataset.open === 'true',
      participant: script.dataset.participant || undefined, signature: script.dataset.participantSignature || undefined,
    });
  if (document.body) go();
  else addEventListener('DOMContentLoaded', go);
}

autoMount();
