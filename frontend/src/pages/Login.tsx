import { useState, type FormEvent } from 'react';
import { useAuth, type MfaStep } from '../auth';
import { Field } from '../components/ui';
import { ApiError } from '../lib/graphql';
import { errorMessage } from '../lib/errors';
import { MfaSignIn } from './LoginMfa';
import { SSOSignIn } from './SSOSignIn';

/** LoginPage signs in with username and password; the server sets a session cookie. */
export function LoginPage() {
  const { login } = useAuth();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // Set after a right password when MFA is asked for.
  const [mfa, setMfa] = useState<MfaStep | null>(null);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      // Once signed in, App leaves the login page for the `next` address.
      setMfa(await login(username, password));
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'Wrong username or password.' : errorMessage(err));
    } finally {
      setBusy(false);
    }
  }

  if (mfa) {
    return (
      <main className="login-wrap">
        <MfaSignIn
          step={mfa}
          onCancel={() => {
            setMfa(null);
            setPassword('');
          }}
        />
      </main>
    );
  }

  return (
    <main className="login-wrap">
      <form className="login card" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">Sign in to tifeeds</h1>
        <p className="muted">Threat-intelligence feeds, indicators and tenants.</p>
        {error && (
          <div className="error-box" role="alert">
            {error}
          </div>
        )}
        <Field label="Username">
          {(id) => <input id={id} name="username" autoComplete="username" required autoFocus value={username} onChange={(e) => setUsername(e.target.value)} />}
        </Field>
        <Field label="Password">
          {(id) => <input id={id} name="password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />}
        </Field>
        <button type="submit" className="btn btn-primary btn-block" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <SSOSignIn />
    </main>
  );
}
