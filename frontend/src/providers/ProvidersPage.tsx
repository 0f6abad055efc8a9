// Model providers: where API keys and local servers are stored (keys are never shown again).
import { Fragment, useEffect, useEffectEvent, useState, type FormEvent } from 'react';
import { api } from '../api/client';
import type { Provider, ProviderInput, ProviderTestResult } from '../api/types';
import { formatDuration } from '../ui/format';
import { EmptyState, ErrorState } from '../ui/States';
import { toast } from '../ui/toast';
import { useAsync } from '../ui/useAsync';

const KINDS: { value: ProviderInput['kind']; label: string; base?: string; key: boolean }[] = [
  { value: 'openai', label: 'OpenAI', key: true },
  { value: 'anthropic', label: 'Anthropic', key: true },
  { value: 'ollama', label: 'Ollama', base: 'http://127.0.0.1:11434', key: false },
  { value: 'openai_compatible', label: 'OpenAI-compatible server', base: 'http://127.0.0.1:8000/v1', key: true },
  { value: 'local', label: 'Local (bundled offline model)', key: false },
];

export function ProvidersPage() {
  const { data, error, reload } = useAsync(() => api.providers(), []);
  const [name, setName] = useState('');
  const [kind, setKind] = useState<ProviderInput['kind']>('openai');
  const [apiBase, setApiBase] = useState('');
  const [apiKey, setApiKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [testing, setTesting] = useState<number | null>(null);
  const kindInfo = KINDS.find((k) => k.value === kind)!;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    try {
      await api.createProvider({ name: name.trim(), kind, ...(apiBase ? { api_base: apiBase } : {}), ...(apiKey ? { api_key: apiKey } : {}) });
      toast(`Added provider “${name}”`, 'success');
      setName('');
      setApiBase('');
      setApiKey('');
      await reload();
    } catch (err) {
      toast((err as Error).message, 'error', 6000);
    } finally {
      setBusy(false);
    }
  };

  const remove = async (id: number, providerName: string) => {
    if (!window.confirm(`Delete provider “${providerName}”? Nodes using it fall back to environment keys.`)) return;
    try {
      await api.deleteProvider(id);
      await reload();
    } catch (err) {
      toast((err as Error).message, 'error');
    }
  };

  return (
    <div className="providers-page">
      <div className="page-header">
        <div>
          <h1>Providers</h1>
          <p className="muted">Where your models run. LLM nodes pick a provider; without one, keys come from the server's environment.</p>
        </div>
      </div>
      <div className="two-col">
        <section>
          {error && <ErrorState error={error} onRetry={() => void reload()} />}
          {data && data.length === 0 && (
            <EmptyState title="No providers yet">Add one with the form: an OpenAI or Anthropic key, or a local Ollama / OpenAI-compatible server.</EmptyState>
          )}
          {data && data.length > 0 && (
            <table className="table">
              <thead>
                <tr><th>Name</th><th>Kind</th><th>Server</th><th>Key</th><th aria-label="Actions" /></tr>
              </thead>
              <tbody>
                {data.map((p) => (
                  <Fragment key={p.id}>
                    <tr>
                      <td><b>{p.name}</b> <span className="muted small">#{p.id}</span></td>
                      <td>{KINDS.find((k) => k.value === p.kind)?.label ?? p.kind}</td>
                      <td className="truncate muted">{p.api_base || 'default'}</td>
                      <td>{p.has_api_key ? <span className="badge badge-succeeded">stored</span> : <span className="badge">none</span>}</td>
                      <td className="row-actions">
                        <button className="btn btn-sm" onClick={() => setTesting(testing === p.id ? null : p.id)} aria-expanded={testing === p.id}>Test connection</button>
                        <button className="btn btn-ghost btn-sm btn-danger" onClick={() => void remove(p.id, p.name)}>Delete</button>
                      </td>
                    </tr>
                    {testing === p.id && (
                      <tr className="test-row">
                        <td colSpan={5}><ConnectionTest provider={p} /></td>
                      </tr>
                    )}
                  </Fragment>
                ))}
              </tbody>
            </table>
          )}
        </section>
        <form className="card form-card" onSubmit={(e) => void submit(e)} aria-label="Add a provider">
          <h2>Add a provider</h2>
          <label className="field">
            <span className="field-label">Name</span>
            <input value={name} onChange={(e) => setName(e.target.value)} required placeholder="e.g. OpenAI (team key)" />
          </label>
          <label className="field">
            <span className="field-label">Kind</span>
            <select value={kind} onChange={(e) => setKind(KINDS.find((k) => k.value === e.target.value)?.value ?? kind)}>
              {KINDS.map((k) => <option key={k.value} value={k.value}>{k.label}</option>)}
            </select>
          </label>
          {kindInfo.base !== undefined && (
            <label className="field">
              <span className="field-label">Server URL</span>
              <input value={apiBase} onChange={(e) => setApiBase(e.target.value)} placeholder={kindInfo.base} type="url" />
            </label>
          )}
          {kindInfo.key && (
            <label className="field">
              <span className="field-label">API key</span>
              <input value={apiKey} onChange={(e) => setApiKey(e.target.value)} type="password" autoComplete="off" placeholder="stored encrypted, never shown again" />
            </label>
          )}
          <button className="btn btn-primary" type="submit" disabled={busy || !name.trim()}>Add provider</button>
        </form>
      </div>
    </div>
  );
}

/** The server's answer, or the request itself failing (reason "request"). */
type TestOutcome = ProviderTestResult | { ok: false; model: string; reason: 'request'; error: string };

/** One tiny real call through the provider: says whether it works, and if not, what to fix. */
function ConnectionTest({ provider }: { provider: Provider }) {
  const [model, setModel] = useState('');
  const [result, setResult] = useState<TestOutcome | null>(null);
  const [busy, setBusy] = useState(false);

  const run = async (event?: FormEvent) => {
    event?.preventDefault();
    setBusy(true);
    setResult(null);
    try {
      setResult(await api.testProvider(provider.id, model.trim() || undefined));
    } catch (err) {
      setResult({ ok: false, model: model.trim(), reason: 'request', error: (err as Error).message });
    } finally {
      setBusy(false);
    }
  };

  // The button that shows this test means "test it now"; the model box is for a second try.
  const testNow = useEffectEvent(() => void run());
  useEffect(() => testNow(), []);

  return (
    <form className="connection-test" onSubmit={(e) => void run(e)} aria-label={`Test ${provider.name}`}>
      <input value={model} onChange={(e) => setModel(e.target.value)} placeholder="model (optional)" aria-label="Model to test" />
      <button className="btn btn-primary btn-sm" type="submit" disabled={busy}>{busy ? 'Testing…' : 'Test again'}</button>
      {result && (
        <div className={`test-result ${result.ok ? 'test-ok' : 'test-error'}`} role="status" data-testid="connection-result">
          {result.ok ? (
            <>
              <b>✓ Connected</b> · {result.model}
              {result.latency_ms !== undefined && <> · {formatDuration(result.latency_ms)}</>}
              {result.reply && <span className="muted"> · replied “{result.reply.slice(0, 60)}”</span>}
            </>
          ) : (
            <>
              <b>✕ Failed{result.reason ? ` (${result.reason.replace(/_/g, ' ')})` : ''}</b>
              {result.model && <> · {result.model}</>}
              <div>{result.error || 'The provider did not answer.'}</div>
            </>
          )}
        </div>
      )}
    </form>
  );
}
