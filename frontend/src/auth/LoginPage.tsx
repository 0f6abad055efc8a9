import { useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { useSession } from './session';
import { Logo } from '../ui/Logo';

export function LoginPage() {
  const login = useSession((s) => s.login);
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await login(username, password);
    } catch (err) {
      setError(err instanceof ApiError && err.status === 400 ? 'Wrong username or password.' : (err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="login-page">
      <form className="login-card" onSubmit={(e) => void submit(e)} aria-label="Log in">
        <div className="login-brand">
          <Logo size={36} />
          <div>
            <h1>Skein</h1>
            <p className="muted">Build, test and debug LLM chat workflows.</p>
          </div>
        </div>
        <label className="field">
          <span className="field-label">Username</span>
          <input name="username" autoComplete="username" value={username} onChange={(e) => setUsername(e.target.value)} autoFocus required />
        </label>
        <label className="field">
          <span className="field-label">Password</span>
          <input name="password" type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />
        </label>
        {error && <div className="form-error" role="alert">{error}</div>}
        <button className="btn btn-primary btn-block" type="submit" disabled={busy}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
        <p className="muted small">No account yet? <code>make run</code> prints the first one; add more with <code>manage.py createsuperuser</code>.</p>
      </form>
    </div>
  );
}
