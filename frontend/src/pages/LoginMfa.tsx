import { useEffect, useState, type FormEvent } from 'react';
import { useAuth, type MfaStep } from '../auth';
import { CodeField, EnrolmentForm, RecoveryCodes, type Enrolment } from '../components/mfa';
import { Field } from '../components/ui';
import { errorMessage } from '../lib/errors';
import { postJSON } from '../lib/graphql';

/**
 * MfaSignIn is the second step of a password sign-in: a code from the
 * user's app (or a recovery code), or, for a user who must enrol, the new
 * secret, a code of it, and the recovery codes shown once.
 */
export function MfaSignIn(props: { step: MfaStep; onCancel: () => void }) {
  const { finishMfa, enter } = useAuth();
  const [code, setCode] = useState('');
  const [recovery, setRecovery] = useState<string | null>(null);
  const [enrolment, setEnrolment] = useState<Enrolment | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const { token, enrol } = props.step;

  useEffect(() => {
    if (!enrol) return;
    let live = true;
    postJSON<{ secret: string; otpauth_url: string; qr_code: string }>('/api/login/mfa/enrol', { mfa_token: token }).then(
      (e) => live && e && setEnrolment({ secret: e.secret, otpauthUrl: e.otpauth_url, qrCode: e.qr_code }),
      (err) => live && setError(errorMessage(err)),
    );
    return () => {
      live = false;
    };
  }, [enrol, token]);

  async function send(answer: { code: string } | { recovery_code: string }) {
    setBusy(true);
    setError(null);
    try {
      const recoveryCodes = await finishMfa(token, answer);
      if (recoveryCodes.length) setCodes(recoveryCodes);
      else await enter();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  }

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void send(recovery === null ? { code: code.trim() } : { recovery_code: recovery.trim() });
  };

  const back = (
    <button type="button" className="btn btn-small" onClick={props.onCancel}>
      Back to sign-in
    </button>
  );
  if (codes) {
    return (
      <div className="login card">
        <h1>Save your recovery codes</h1>
        <RecoveryCodes codes={codes} doneLabel="Continue to the dashboard" onDone={() => void enter()} />
      </div>
    );
  }
  if (enrol) {
    return (
      <div className="login card">
        <h1>Set up MFA</h1>
        <p className="muted">Your organisation requires a second factor: a code from an authenticator app each time you sign in.</p>
        {enrolment ? (
          <EnrolmentForm enrolment={enrolment} busy={busy} error={error} onConfirm={(c) => void send({ code: c })} />
        ) : error ? (
          <div className="error-box" role="alert">
            {error}
          </div>
        ) : (
          <p>Making your secret…</p>
        )}
        {back}
      </div>
    );
  }
  return (
    <form className="login card" onSubmit={submit} aria-labelledby="mfa-title">
      <h1 id="mfa-title">Two-step sign-in</h1>
      {error && (
        <div className="error-box" role="alert">
          {error}
        </div>
      )}
      {recovery === null ? (
        <CodeField label="Code from your authenticator app" value={code} onChange={setCode} />
      ) : (
        <Field label="Recovery code">
          {(id) => <input id={id} name="recovery_code" className="mono" autoComplete="off" required value={recovery} onChange={(e) => setRecovery(e.target.value)} />}
        </Field>
      )}
      <button type="submit" className="btn btn-primary btn-block" disabled={busy}>
        {busy ? 'Checking…' : 'Sign in'}
      </button>
      <button type="button" className="btn btn-small" onClick={() => setRecovery(recovery === null ? '' : null)}>
        {recovery === null ? 'Use a recovery code instead' : 'Use a code from your app'}
      </button>
      {back}
    </form>
  );
}
