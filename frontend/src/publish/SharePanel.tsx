// Share / Triggers: everything a new user needs once the workflow is published. The widget's embed
// snippet, key, allowed origins and look; each trigger's webhook URL (with a curl example and the
// signing secret) or next scheduled runs.
import { useEffect, useState, type FormEvent } from 'react';
import { api } from '../api/client';
import type { TriggerInfo, WidgetSettings } from '../api/types';
import { CopyButton } from '../ui/clipboard';
import { formatDateTime } from '../ui/format';
import { ErrorState } from '../ui/States';
import { toast } from '../ui/toast';
import { useAsync } from '../ui/useAsync';
import { LimitsSection } from './LimitsSection';
import { curlExample, formToTheme, parseOrigins, signedCurlExample, THEME_DEFAULTS, themeToForm, TRIGGER_LABELS, type ThemeForm } from './share';

export function SharePanel({ workflowId, onClose }: { workflowId: number; onClose: () => void }) {
  const { data, error, reload, setData } = useAsync(
    async () => {
      const [widget, workflow] = await Promise.all([api.widgetSettings(workflowId), api.workflow(workflowId)]);
      return { widget, triggers: workflow.triggers ?? [], version: workflow.published_version };
    },
    [workflowId],
  );

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => event.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);

  return (
    <div className="modal-backdrop" onClick={onClose}>
      <div className="modal share-modal" role="dialog" aria-modal="true" aria-labelledby="share-title" onClick={(e) => e.stopPropagation()} data-testid="share-panel">
        <div className="modal-header share-header">
          <div>
            <h2 id="share-title">Share &amp; triggers</h2>
            <p className="muted small">
              {data === undefined
                ? 'Loading…'
                : data.version
                  ? `Live: version ${data.version}. The widget, webhooks and schedules run the published version.`
                  : 'Not published yet: publish the workflow to turn on the widget, webhooks and schedules.'}
            </p>
          </div>
          <button className="btn btn-ghost btn-icon" onClick={onClose} aria-label="Close">×</button>
        </div>
        <div className="share-body">
          {error && <ErrorState error={error} onRetry={() => void reload()} />}
          {data && (
            <>
              <WidgetSection workflowId={workflowId} settings={data.widget} onChange={(widget) => setData({ ...data, widget })} />
              <TriggersSection workflowId={workflowId} triggers={data.triggers} published={!!data.version} onChange={(triggers) => setData({ ...data, triggers })} />
              <WidgetSettingsForm workflowId={workflowId} settings={data.widget} onChange={(widget) => setData({ ...data, widget })} />
              <LimitsSection workflowId={workflowId} />
            </>
          )}
        </div>
      </div>
    </div>
  );
}

function WidgetSection({ workflowId, settings, onChange }: { workflowId: number; settings: WidgetSettings; onChange: (s: WidgetSettings) => void }) {
  const rotate = async () => {
    if (!window.confirm('Rotate the public key? Pages that embed the old key stop working until you update their snippet.')) return;
    try {
      onChange(await api.rotateWidgetKey(workflowId));
      toast('New key: update the snippet on your pages.', 'success');
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };

  const rotateSecret = async () => {
    if (!window.confirm('Rotate the identity secret? Ids signed with the old one are refused until your server signs with the new one.')) return;
    try {
      onChange(await api.rotateIdentitySecret(workflowId));
      toast('New identity secret: sign with it on your server.', 'success');
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };

  return (
    <section className="share-section" aria-labelledby="share-widget">
      <h3 id="share-widget">Chat widget</h3>
      <p className="muted small">Paste this before <code>&lt;/body&gt;</code> on your site: a chat button appears in the corner.</p>
      <div className="code-block">
        <pre data-testid="embed-snippet">{settings.embed_snippet}</pre>
        <CopyButton text={settings.embed_snippet} what="embed snippet" />
      </div>
      <div className="share-row small">
        <span className="muted">Public key</span> <code data-testid="public-key">{settings.public_key}</code>
        <button type="button" className="link-button" onClick={() => void rotate()}>Rotate key</button>
      </div>
      {!settings.published && <p className="share-note small">The widget answers once the workflow is published.</p>}
      {settings.identity_secret && (
        <details className="share-identity small">
          <summary>Signed-in visitors</summary>
          <p className="muted">
            Visitors are anonymous (one participant per browser). To let memory follow your logged-in users, add{' '}
            <code>data-participant="USER_ID"</code> and <code>data-participant-signature="…"</code> to the script tag, the
            signature being the hex HMAC-SHA256 of the id with this secret, computed on your server. Keep the secret there.
          </p>
          <div className="share-row">
            <span className="muted">Identity secret</span> <code data-testid="identity-secret">{settings.identity_secret}</code>
            <CopyButton text={settings.identity_secret} what="identity secret" />
            <button type="button" className="link-button" onClick={() => void rotateSecret()}>Rotate secret</button>
          </div>
        </details>
      )}
    </section>
  );
}

/** Where the widget may be embedded and how it looks (the page's data-* attributes still win). */
function WidgetSettingsForm({ workflowId, settings, onChange }: { workflowId: number; settings: WidgetSettings; onChange: (s: WidgetSettings) => void }) {
  const [origins, setOrigins] = useState(settings.allowed_origins.join('\n'));
  const [form, setForm] = useState<ThemeForm>(() => themeToForm(settings.theme));
  const [busy, setBusy] = useState(false);
  const field = <K extends keyof ThemeForm>(key: K) => ({ value: form[key], onChange: (e: { target: { value: string } }) => setForm({ ...form, [key]: e.target.value as ThemeForm[K] }) });

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    try {
      const next = await api.updateWidget(workflowId, { allowed_origins: parseOrigins(origins), theme: formToTheme(form) });
      onChange(next);
      setOrigins(next.allowed_origins.join('\n'));
      toast('Widget settings saved.', 'success');
    } catch (error) {
      toast((error as Error).message, 'error', 6000);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="share-section" aria-labelledby="share-look">
      <h3 id="share-look">Widget settings</h3>
      <p className="muted small">Where the widget may run and how it looks. The editor's test chat previews it.</p>
      <form className="share-form" onSubmit={(e) => void save(e)}>
        <label className="field">
          <span className="field-label">Allowed sites</span>
          <textarea rows={2} value={origins} onChange={(e) => setOrigins(e.target.value)} placeholder="https://example.com (one per line)" aria-describedby="origins-help" />
          <span id="origins-help" className="field-help">Empty: any site may embed it. <code>https://*.example.com</code> allows its subdomains.</span>
        </label>
        <div className="share-grid">
          <label className="field">
            <span className="field-label">Title</span>
            <input {...field('title')} placeholder="the workflow's name" maxLength={80} />
          </label>
          <label className="field">
            <span className="field-label">Message box placeholder</span>
            <input {...field('placeholder')} placeholder="Type a message…" maxLength={120} />
          </label>
        </div>
        <label className="field">
          <span className="field-label">Welcome message</span>
          <input {...field('welcome')} placeholder="Hi! How can I help?" maxLength={1000} />
        </label>
        <label className="field">
          <span className="field-label">Starter questions</span>
          <textarea rows={2} {...field('starters')} placeholder="One per line" />
        </label>
        <div className="share-grid share-colors">
          {(
            [
              ['color', 'Accent'],
              ['text_color', 'Text on accent'],
              ['background', 'Background'],
            ] as const
          ).map(([key, label]) => (
            <label className="field" key={key}>
              <span className="field-label">{label}</span>
              <span className="color-field">
                <input type="color" aria-label={`${label} colour`} value={/^#[0-9a-f]{6}$/i.test(form[key]) ? form[key] : THEME_DEFAULTS[key]} onChange={(e) => setForm({ ...form, [key]: e.target.value })} />
                <input {...field(key)} placeholder={THEME_DEFAULTS[key]} maxLength={40} />
              </span>
            </label>
          ))}
          <label className="field">
            <span className="field-label">Position</span>
            <select {...field('position')}>
              <option value="right">Bottom right</option>
              <option value="left">Bottom left</option>
            </select>
          </label>
        </div>
        <div className="button-row">
          <button className="btn btn-primary btn-sm" type="submit" disabled={busy}>{busy ? 'Saving…' : 'Save widget settings'}</button>
        </div>
      </form>
    </section>
  );
}

/** Text with `commands` in backquotes shown as code. */
function withCode(text: string) {
  return text.split('`').map((part, i) => (i % 2 ? <code key={i}>{part}</code> : part));
}

function TriggersSection({ workflowId, triggers, published, onChange }: { workflowId: number; triggers: TriggerInfo[]; published: boolean; onChange: (t: TriggerInfo[]) => void }) {
  return (
    <section className="share-section" aria-labelledby="share-triggers">
      <h3 id="share-triggers">Triggers</h3>
      {!published && <p className="muted small">Publish to get webhook URLs and start schedules.</p>}
      {published && triggers.length === 0 && <p className="muted small">The published version has no triggers.</p>}
      {triggers.map((t) => (
        <TriggerCard key={t.node} workflowId={workflowId} trigger={t} onChange={onChange} />
      ))}
    </section>
  );
}

function TriggerCard({ workflowId, trigger, onChange }: { workflowId: number; trigger: TriggerInfo; onChange: (t: TriggerInfo[]) => void }) {
  const [revealed, setRevealed] = useState(false);
  const regenerate = async () => {
    if (!window.confirm('Regenerate this webhook URL? The current URL and signing secret stop working at once.')) return;
    try {
      onChange(await api.regenerateWebhook(workflowId, trigger.node));
      toast('New webhook URL: update the callers.', 'success');
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };
  const nextRuns = trigger.next_runs ?? (trigger.next_run ? [trigger.next_run] : []);

  return (
    <div className="trigger-card" data-testid={`trigger-${trigger.node}`}>
      <div className="trigger-head">
        <b>{TRIGGER_LABELS[trigger.type] ?? trigger.type}</b> <span className="muted small">{trigger.node}</span>
      </div>
      {trigger.type === 'trigger.chat' && <p className="muted small">The chat widget above, the editor's test chat and the chat API.</p>}
      {trigger.type === 'trigger.manual' && <p className="muted small">The editor's ▶ Run button.</p>}
      {trigger.webhook_url && (
        <>
          <div className="copy-line">
            <input readOnly value={trigger.webhook_url} aria-label={`Webhook URL of ${trigger.node}`} data-testid="webhook-url" onFocus={(e) => e.target.select()} />
            <CopyButton text={trigger.webhook_url} what="webhook URL" />
            <button type="button" className="btn btn-sm btn-ghost" onClick={() => void regenerate()}>Regenerate URL</button>
          </div>
          <div className="code-block">
            <pre>{trigger.require_signature ? signedCurlExample(trigger.webhook_url) : curlExample(trigger.webhook_url)}</pre>
            <CopyButton text={trigger.require_signature ? signedCurlExample(trigger.webhook_url) : curlExample(trigger.webhook_url)} what="curl example" />
          </div>
          <p className="muted small">
            The reply comes back with <code>?wait=1</code>; without it the call answers 202 at once. Send <code>thread</code> in the body to continue a conversation.
          </p>
          {trigger.require_signature && trigger.signing_secret && (
            <div className="copy-line">
              <span className="muted small">Signing secret</span>
              <code className="secret" data-testid="signing-secret">{revealed ? trigger.signing_secret : '•'.repeat(24)}</code>
              <button type="button" className="btn btn-sm btn-ghost" onClick={() => setRevealed(!revealed)}>{revealed ? 'Hide' : 'Reveal'}</button>
              <CopyButton text={trigger.signing_secret} what="signing secret" />
            </div>
          )}
        </>
      )}
      {trigger.type === 'trigger.schedule' && trigger.scheduler && !trigger.scheduler.running && (
        <p className="share-note small" role="alert" data-testid="scheduler-warning">
          ⚠ {withCode(trigger.scheduler.message)}
        </p>
      )}
      {trigger.type === 'trigger.schedule' && (
        <div className="small">
          <span className="muted">Next runs</span>
          {nextRuns.length ? (
            <ul className="next-runs">
              {nextRuns.map((when) => (
                <li key={when}>{formatDateTime(when)}</li>
              ))}
            </ul>
          ) : (
            <p className="muted">None scheduled.</p>
          )}
        </div>
      )}
    </div>
  );
}
