// The account page: change the password (which also revokes the account's API tokens).
import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../api/client';
import { useSession } from './session';
import { toast } from '../ui/toast';

export function AccountPage() {
  const user = useSession((s) => s.user);
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (next !== again) {
      setErrors({ again: 'The two new passwords differ.' });
      return;
    }
    setBusy(true);
    setErrors({});
    try {
      await api.changePassword(current, next);
      setCurrent('');
      setNext('');
      setAgain('');
      toast('Password changed. API tokens of this account were revoked.', 'success', 6000);
    } catch (err) {
      const body = err instanceof ApiError ? (err.body as Record<string, unknown> | null) : null;
      const field = (name: string) => {
        const value = body?.[name];
        return Array.isArray(value) ? value.join(' ') : typeof value === 'string' ? value : '';
      };
      const found = { old_password: field('old_password'), new_password: field('new_password') };
      if (found.old_password || found.new_password) setErrors(found);
      else setErrors({ form: (err as Error).message });
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="account-page">
      <div className="page-header">
        <div>
          <h1>Account</h1>
          <p className="muted">Logged in as <b>{user?.username}</b>.</p>
        </div>
      </div>
      <form className="card form-card" onSubmit={(e) => void submit(e)} aria-label="Change password">
        <h2>Change password</h2>
        <label className="field">
          <span className="field-label">Current password</span>
          <input type="password" autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.target.value)} required />
          {errors.old_password && <span className="field-error" role="alert">{errors.old_password}</span>}
        </label>
        <label className="field">
          <span className="field-label">New password</span>
          <input type="password" autoComplete="new-password" value={next} onChange={(e) => setNext(e.target.value)} required minLength={10} />
          {errors.new_password && <span className="field-error" role="alert">{errors.new_password}</span>}
        </label>
        <label className="field">
          <span className="field-label">New password, again</span>
          <input type="password" autoComplete="new-password" value={again} onChange={(e) => setAgain(e.target.value)} required />
          {errors.again && <span className="field-error" role="alert">{errors.again}</span>}
        </label>
        {errors.form && <div className="form-error" role="alert">{errors.form}</div>}
        <p className="muted small">Scripts using an API token of this account need a new one afterwards (POST /api/auth/token/).</p>
        <button className="btn btn-primary" type="submit" disabled={busy}>{busy ? 'Changing…' : 'Change password'}</button>
      </form>
    </div>
  );
}
