// What the share panel shows and edits, as plain functions: curl examples for a webhook, the widget
// theme as form fields and back, allowed origins from free text.
import type { WidgetTheme } from '../api/types';

const shellQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;
const EXAMPLE_BODY = '{"message":"hello"}';

function withWait(url: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}wait=1`;
}

/** `curl` that fires the webhook and waits for the reply. */
export function curlExample(url: string): string {
  return `curl -X POST ${shellQuote(withWait(url))} -H 'Content-Type: application/json' -d ${shellQuote(EXAMPLE_BODY)}`;
}

/** The same call signed: HMAC-SHA256 of `<timestamp>.<body>` with the signing secret. */
export function signedCurlExample(url: string): string {
  return [
    `SECRET='<signing secret>'; TS=$(date +%s); BODY=${shellQuote(EXAMPLE_BODY)}`,
    `SIG=$(printf '%s.%s' "$TS" "$BODY" | openssl dgst -sha256 -hmac "$SECRET" | sed 's/^.* //')`,
    `curl -X POST ${shellQuote(withWait(url))} -H 'Content-Type: application/json' \\`,
    `  -H "X-Skein-Timestamp: $TS" -H "X-Skein-Signature: sha256=$SIG" -d "$BODY"`,
  ].join('\n');
}

/** Origins typed one per line (commas and spaces also separate them); blanks and repeats dropped. */
export function parseOrigins(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).map((o) => o.trim().replace(/\/+$/, '')).filter(Boolean))];
}

export interface ThemeForm {
  title: string;
  welcome: string;
  placeholder: string;
  starters: string;
  color: string;
  text_color: string;
  background: string;
  position: 'left' | 'right';
}

export const THEME_DEFAULTS = { color: '#2563eb', text_color: '#ffffff', background: '#ffffff' };

export function themeToForm(theme: WidgetTheme): ThemeForm {
  return {
    title: theme.title ?? '',
    welcome: theme.welcome ?? '',
    placeholder: theme.placeholder ?? '',
    starters: (theme.starters ?? []).join('\n'),
    color: theme.color ?? '',
    text_color: theme.text_color ?? '',
    background: theme.background ?? '',
    position: theme.position ?? 'right',
  };
}

/** The theme to PATCH (it replaces the stored one as a whole): empty fields are left out. */
export function formToTheme(form: ThemeForm): WidgetTheme {
  const theme: WidgetTheme = { position: form.position };
  for (const key of ['title', 'welcome', 'placeholder', 'color', 'text_color', 'background'] as const) {
    const value = form[key].trim();
    if (value) theme[key] = value;
  }
  const starters = form.starters.split('\n').map((s) => s.trim()).filter(Boolean);
  if (starters.length) theme.starters = starters;
  return theme;
}

export const TRIGGER_LABELS: Record<string, string> = {
  'trigger.chat': 'Chat message',
  'trigger.webhook': 'Webhook',
  'trigger.schedule': 'Schedule',
  'trigger.manual': 'Manual run',
};
