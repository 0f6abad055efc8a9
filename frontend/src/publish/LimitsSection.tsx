// Share panel: daily spend limits (tokens or cost) per workflow, per widget visitor and per
// OpenAI-endpoint caller, and what the workflow used today.
import { useState, type FormEvent } from 'react';
import { ecosystem, type LimitScope, type Limits } from '../api/ecosystem';
import { ErrorState } from '../ui/States';
import { toast } from '../ui/toast';
import { useAsync } from '../ui/useAsync';

const SCOPES: { scope: LimitScope; label: string; hint: string }[] = [
  { scope: 'workflow', label: 'Whole workflow', hint: 'every run together' },
  { scope: 'visitor', label: 'Each widget visitor', hint: 'by their address' },
  { scope: 'caller', label: 'Each API caller', hint: 'by the OpenAI request’s user field' },
];

type Form = Record<LimitScope, { tokens: string; cost: string }>;

function toForm(limits: Limits): Form {
  const field = (value?: number | null) => (value === null || value === undefined ? '' : String(value));
  return Object.fromEntries(SCOPES.map(({ scope }) => [scope, { tokens: field(limits[scope].tokens), cost: field(limits[scope].cost) }])) as Form;
}

/** The limits the form says: empty fields are no limit. Throws with a message for a bad number. */
export function fromForm(form: Form): Record<LimitScope, { tokens: number | null; cost: number | null }> {
  const number = (text: string, what: string, integer: boolean) => {
    if (!text.trim()) return null;
    const value = Number(text);
    if (!Number.isFinite(value) || value < 0 || (integer && (!Number.isInteger(value) || value < 1))) {
      throw new Error(`${what} must be ${integer ? 'a whole number of tokens, at least 1' : 'an amount in dollars'} (or empty for no limit).`);
    }
    return value;
  };
  return Object.fromEntries(
    SCOPES.map(({ scope, label }) => [scope, { tokens: number(form[scope].tokens, `${label}: tokens`, true), cost: number(form[scope].cost, `${label}: cost`, false) }]),
  ) as Record<LimitScope, { tokens: number | null; cost: number | null }>;
}

export function LimitsSection({ workflowId }: { workflowId: number }) {
  const limits = useAsync(() => ecosystem.limits(workflowId), [workflowId]);
  const [form, setForm] = useState<Form | null>(null);
  const [saving, setSaving] = useState(false);
  const shown = form ?? (limits.data ? toForm(limits.data) : null);

  const save = async (event: FormEvent) => {
    event.preventDefault();
    if (!shown) return;
    setSaving(true);
    try {
      limits.setData(await ecosystem.updateLimits(workflowId, fromForm(shown)));
      setForm(null);
      toast('Spend limits saved.', 'success');
    } catch (error) {
      toast((error as Error).message, 'error', 6000);
    } finally {
      setSaving(false);
    }
  };

  return (
    <section className="share-section" aria-labelledby="share-limits" data-testid="limits-section">
      <h3 id="share-limits">Daily spend limits</h3>
      <p className="muted small">
        A turn that would pass a limit is refused before any model is called; the visitor is told, and the run shows a warning.
        Days start at midnight UTC. Leave a field empty for no limit.
      </p>
      {limits.error && <ErrorState error={limits.error} onRetry={() => void limits.reload()} />}
      {limits.data && (
        <p className="small" data-testid="limits-today">
          Today: <b>{limits.data.today.tokens.toLocaleString()}</b> tokens, <b>${limits.data.today.cost.toFixed(4)}</b> in {limits.data.today.runs} run
          {limits.data.today.runs === 1 ? '' : 's'}
          {limits.data.today.refused ? <>, <span className="badge badge-warning">{limits.data.today.refused} refused</span></> : null}
        </p>
      )}
      {shown && (
        <form className="share-form" onSubmit={(e) => void save(e)}>
          <table className="table limits-table">
            <thead>
              <tr>
                <th>Limit</th>
                <th>Tokens a day</th>
                <th>Cost a day ($)</th>
              </tr>
            </thead>
            <tbody>
              {SCOPES.map(({ scope, label, hint }) => (
                <tr key={scope}>
                  <td>{label} <span className="muted small">({hint})</span></td>
                  {(['tokens', 'cost'] as const).map((field) => (
                    <td key={field}>
                      <input
                        inputMode="decimal"
                        aria-label={`${label}: ${field} a day`}
                        value={shown[scope][field]}
                        placeholder="no limit"
                        onChange={(e) => setForm({ ...shown, [scope]: { ...shown[scope], [field]: e.target.value } })}
                      />
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
          <div className="button-row">
            <button className="btn btn-primary btn-sm" type="submit" disabled={saving || form === null}>{saving ? 'Saving…' : 'Save limits'}</button>
          </div>
        </form>
      )}
    </section>
  );
}
