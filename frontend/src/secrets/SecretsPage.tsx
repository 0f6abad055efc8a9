// Secrets: values a tool sends (an API key in a header, an MCP server's token), stored encrypted
// and named by tools as {{ secrets.NAME }}. Only names are ever shown: a value can be replaced,
// never read back.
import { useState, type FormEvent } from 'react';
import { api, ApiError, describeError } from '../api/client';
import type { Secret } from '../api/types';
import { forgetSecrets } from '../editor/toolData';
import { secretRef } from '../schema/secrets';
import { formatDateTime } from '../ui/format';
import { EmptyState, ErrorState } from '../ui/States';
import { toast } from '../ui/toast';
import { useAsync } from '../ui/useAsync';

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/** The server's own words for a refusal (a taken name answers 409, which is no stale revision here). */
const problemOf = (err: unknown) => (err instanceof ApiError ? describeError(err.status, err.body) : (err as Error).message);

export function SecretsPage() {
  const { data, error, reload } = useAsync(() => api.secrets(), []);
  const [replacing, setReplacing] = useState<number | null>(null);
  const changed = async () => {
    forgetSecrets();
    await reload();
  };

  const remove = async (secret: Secret) => {
    if (!window.confirm(`Delete the secret “${secret.name}”? Tools that use it fail until it is stored again.`)) return;
    try {
      await api.deleteSecret(secret.id);
      toast(`Deleted “${secret.name}”`, 'success');
      await changed();
    } catch (err) {
      toast(problemOf(err), 'error', 6000);
    }
  };

  return (
    <div className="secrets-page">
      <div className="page-header">
        <div>
          <h1>Secrets</h1>
          <p className="muted">
            API keys and tokens your tools send. A tool's header names one as <code>{'{{ secrets.NAME }}'}</code>; its value is
            filled in when the request goes out and never shown again, here, to a model or in a trace.
          </p>
        </div>
      </div>
      <div className="two-col">
        <section>
          {error && <ErrorState error={error} onRetry={() => void reload()} />}
          {data && data.length === 0 && <EmptyState title="No secrets yet">Store one with the form, then use it in a tool's headers.</EmptyState>}
          {data && data.length > 0 && (
            <table className="table" data-testid="secrets-table">
              <thead>
                <tr><th>Name</th><th>In a header</th><th>Updated</th><th aria-label="Actions" /></tr>
              </thead>
              <tbody>
                {data.map((secret) => (
                  <tr key={secret.id} data-testid={`secret-${secret.name}`}>
                    <td><b>{secret.name}</b></td>
                    <td><code className="small">{secretRef(secret.name)}</code></td>
                    <td className="muted small">{formatDateTime(secret.updated)}</td>
                    <td className="row-actions">
                      {replacing === secret.id ? (
                        <ReplaceForm secret={secret} onDone={async (saved) => { setReplacing(null); if (saved) await changed(); }} />
                      ) : (
                        <>
                          <button className="btn btn-sm" onClick={() => setReplacing(secret.id)}>Replace value</button>
                          <button className="btn btn-ghost btn-sm btn-danger" onClick={() => void remove(secret)}>Delete</button>
                        </>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
        <CreateForm onCreated={changed} />
      </div>
    </div>
  );
}

function CreateForm({ onCreated }: { onCreated: () => Promise<void> }) {
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState('');
  const badName = name !== '' && !NAME.test(name);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setProblem('');
    try {
      await api.createSecret({ name, value });
      toast(`Stored “${name}”`, 'success');
      setName('');
      setValue('');
      await onCreated();
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="card form-card" onSubmit={(e) => void submit(e)} aria-label="Store a secret">
      <h2>Store a secret</h2>
      <label className="field">
        <span className="field-label">Name</span>
        <input name="name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} placeholder="e.g. orders_api_key" autoComplete="off" spellCheck={false} aria-invalid={badName || undefined} />
        {badName ? (
          <span className="field-error">Letters, digits, “_”, “.” and “-” only.</span>
        ) : (
          <span className="field-help">How tools name it: {secretRef(name || 'NAME')}</span>
        )}
      </label>
      <label className="field">
        <span className="field-label">Value</span>
        <input name="value" value={value} onChange={(e) => setValue(e.target.value)} required maxLength={10_000} type="password" autoComplete="new-password" placeholder="stored encrypted, never shown again" />
      </label>
      {problem && <div className="field-error" role="alert" data-testid="secret-error">{problem}</div>}
      <button className="btn btn-primary" type="submit" disabled={busy || !name || !value || badName}>Store secret</button>
    </form>
  );
}

function ReplaceForm({ secret, onDone }: { secret: Secret; onDone: (saved: boolean) => Promise<void> }) {
  const [value, setValue] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState('');
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setProblem('');
    try {
      await api.replaceSecret(secret.id, value);
      toast(`Replaced the value of “${secret.name}”`, 'success');
      await onDone(true);
    } catch (err) {
      setProblem(problemOf(err));
      setBusy(false);
    }
  };
  return (
    <form className="replace-secret" onSubmit={(e) => void submit(e)} aria-label={`Replace ${secret.name}`}>
      <input value={value} onChange={(e) => setValue(e.target.value)} type="password" autoComplete="new-password" maxLength={10_000} required autoFocus aria-label={`New value of ${secret.name}`} placeholder="new value" />
      <button className="btn btn-primary btn-sm" type="submit" disabled={busy || !value}>Save</button>
      <button className="btn btn-ghost btn-sm" type="button" onClick={() => void onDone(false)}>Cancel</button>
      {problem && <div className="field-error" role="alert">{problem}</div>}
    </form>
  );
}
