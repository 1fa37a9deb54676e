import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { ChangePasswordMutation } from '../api';
import { useAuth } from '../auth';
import { MfaSettings } from '../components/mfa';
import { ApiKeys } from '../components/secrets';
import { useToast } from '../components/toast';
import { Field, Page } from '../components/ui';
import { fieldErrors, formError } from '../lib/errors';
import { request } from '../lib/graphql';

/** AccountPage is the signed-in user's own: their password and their API keys. */
export function AccountPage() {
  const { user } = useAuth();
  return (
    <Page id="account" title="Your account" description={`Signed in as ${user?.username ?? ''}: your password, MFA and your API keys.`}>
      <h2>Password</h2>
      <ChangePasswordForm />
      <h2>Two-step sign-in (MFA)</h2>
      <MfaSettings />
      <h2>API keys</h2>
      <ApiKeys />
    </Page>
  );
}

/**
 * ChangePasswordForm changes the signed-in user's password; the user's other
 * sessions end. After a reset it is all a session may do.
 */
export function ChangePasswordForm(props: { onChanged?: () => void }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const toast = useToast();
  const qc = useQueryClient();
  const save = useMutation({
    mutationFn: () => request(ChangePasswordMutation, { currentPassword: current, newPassword: next }),
    onSuccess: () => {
      toast.success('Password changed; your other sessions ended');
      setCurrent('');
      setNext('');
      setAgain('');
      void qc.invalidateQueries({ queryKey: ['me'] });
      props.onChanged?.();
    },
  });
  const errs = fieldErrors(save.error);
  const top = formError(save.error, ['currentPassword', 'newPassword']);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setMismatch(next !== again);
    if (next === again) save.mutate();
  };
  return (
    <form className="form-grid" onSubmit={submit} noValidate aria-label="Change password">
      {top && (
        <div className="error-box span-2" role="alert">
          {top}
        </div>
      )}
      <PasswordField label="Current password" autoComplete="current-password" error={errs.currentPassword} value={current} onChange={setCurrent} />
      <PasswordField label="New password" autoComplete="new-password" error={errs.newPassword} hint="At least 8 characters." value={next} onChange={setNext} />
      <PasswordField
        label="New password again"
        autoComplete="new-password"
        error={mismatch ? 'The two new passwords differ.' : undefined}
        value={again}
        onChange={setAgain}
      />
      <div>
        <button type="submit" className="btn btn-primary" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : 'Change password'}
        </button>
      </div>
    </form>
  );
}

/** MustChangePassword is all a session signed in with a one-time password shows. */
export function MustChangePasswordPage() {
  const { user, logout } = useAuth();
  return (
    <main className="login-wrap">
      <div className="login card">
        <h1>Choose a new password</h1>
        <p className="muted">
          {user?.username}, your password was reset. Enter the one-time password you were given, then your new password.
        </p>
        <ChangePasswordForm />
        <button type="button" className="btn btn-small" onClick={() => void logout()}>
          Sign out
        </button>
      </div>
    </main>
  );
}

/** PasswordField is one required password input of the form, with its error beside it. */
function PasswordField(props: {
  label: string;
  autoComplete: 'current-password' | 'new-password';
  error?: string;
  hint?: string;
  value: string;
  onChange: (v: string) => void;
}) {
  return (
    <Field label={props.label} error={props.error} hint={props.hint}>
      {(id, d) => (
        <input
          id={id}
          type="password"
          autoComplete={props.autoComplete}
          aria-describedby={d}
          aria-invalid={!!props.error}
          required
          value={props.value}
          onChange={(e) => props.onChange(e.target.value)}
        />
      )}
    </Field>
  );
}
