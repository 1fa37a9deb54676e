import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { BeginMfaEnrolmentMutation, ConfirmMfaEnrolmentMutation, DisableMfaMutation, MfaStatusQuery, RegenerateMfaRecoveryCodesMutation } from '../api';
import { copyText } from '../lib/clipboard';
import { errorMessage, fieldErrors, formError } from '../lib/errors';
import { request } from '../lib/graphql';
import { useToast } from './toast';
import { Field, QueryView } from './ui';

/** Enrolment is a new TOTP secret as the server gives it. */
export interface Enrolment {
  secret: string;
  otpauthUrl: string;
  qrCode: string;
}

/**
 * EnrolmentForm shows a new secret (the QR code and the secret as text) and
 * asks for a code of it, which turns MFA on.
 */
export function EnrolmentForm(props: { enrolment: Enrolment; busy: boolean; error?: string | null; onConfirm: (code: string) => void }) {
  const [code, setCode] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    props.onConfirm(code.trim());
  };
  return (
    <form className="mfa-enrol" onSubmit={submit} aria-label="Set up MFA">
      <p>
        Scan this QR code with an authenticator app (any app for time-based codes, TOTP), or type the secret into it. Then enter the six-digit
        code the app shows.
      </p>
      <img className="mfa-qr" src={props.enrolment.qrCode} alt="QR code of the MFA secret" width={200} height={200} />
      <Field label="Secret">
        {(id) => <input id={id} className="mono" readOnly value={props.enrolment.secret} data-testid="mfa-secret" onFocus={(e) => e.target.select()} />}
      </Field>
      {props.error && (
        <div className="error-box" role="alert">
          {props.error}
        </div>
      )}
      <CodeField label="Code from your app" value={code} onChange={setCode} />
      <button type="submit" className="btn btn-primary" disabled={props.busy || code.trim().length !== 6}>
        {props.busy ? 'Checking…' : 'Turn on MFA'}
      </button>
    </form>
  );
}

/** CodeField is the input of a six-digit TOTP code. */
export function CodeField(props: { label: string; value: string; onChange: (v: string) => void; error?: string }) {
  return (
    <Field label={props.label} error={props.error}>
      {(id, d) => (
        <input
          id={id}
          name="code"
          inputMode="numeric"
          autoComplete="one-time-code"
          pattern="[0-9]{6}"
          maxLength={6}
          aria-describedby={d}
          aria-invalid={!!props.error}
          required
          value={props.value}
          onChange={(e) => props.onChange(e.target.value.replace(/\D/g, ''))}
        />
      )}
    </Field>
  );
}

/** RecoveryCodes shows the ten one-time recovery codes, this once. */
export function RecoveryCodes(props: { codes: string[]; onDone: () => void; doneLabel: string }) {
  const toast = useToast();
  return (
    <div className="mfa-recovery">
      <p>
        These recovery codes each stand in for a code from your app once, if you lose it. Keep them somewhere safe: they are shown this once.
      </p>
      <ul className="mono" aria-label="Recovery codes" data-testid="recovery-codes">
        {props.codes.map((c) => (
          <li key={c}>{c}</li>
        ))}
      </ul>
      <div className="row-actions">
        <button
          type="button"
          className="btn btn-small"
          onClick={() => copyText(props.codes.join('\n')).then(() => toast.success('Copied'), (err) => toast.error(errorMessage(err)))}
        >
          Copy
        </button>
        <button type="button" className="btn btn-primary" onClick={props.onDone}>
          {props.doneLabel}
        </button>
      </div>
    </div>
  );
}

const mfaKey = ['mfa-status'];

/**
 * MfaSettings is the Account page's MFA section: enrol, replace the recovery
 * codes, turn MFA off (not when the tenant requires it).
 */
export function MfaSettings() {
  const q = useQuery({ queryKey: mfaKey, queryFn: () => request(MfaStatusQuery) });
  const qc = useQueryClient();
  const toast = useToast();
  const [enrolment, setEnrolment] = useState<Enrolment | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [regenCode, setRegenCode] = useState('');
  const [offWith, setOffWith] = useState('');
  const refresh = () => void qc.invalidateQueries({ queryKey: mfaKey });
  const begin = useMutation({
    mutationFn: () => request(BeginMfaEnrolmentMutation).then((r) => r.beginMfaEnrolment),
    onSuccess: setEnrolment,
    onError: (err) => toast.error(errorMessage(err)),
  });
  const confirm = useMutation({
    mutationFn: (code: string) => request(ConfirmMfaEnrolmentMutation, { code }).then((r) => r.confirmMfaEnrolment.codes),
    onSuccess: (c) => {
      setEnrolment(null);
      setCodes(c);
      toast.success('MFA is on');
      refresh();
    },
  });
  const regenerate = useMutation({
    mutationFn: () => request(RegenerateMfaRecoveryCodesMutation, { code: regenCode }).then((r) => r.regenerateMfaRecoveryCodes.codes),
    onSuccess: (c) => {
      setRegenCode('');
      setCodes(c);
      refresh();
    },
  });
  const off = useMutation({
    // Six digits are a code; anything else is the password.
    mutationFn: () => {
      const isCode = /^\d{6}$/.test(offWith);
      return request(DisableMfaMutation, { code: isCode ? offWith : null, password: isCode ? null : offWith });
    },
    onSuccess: () => {
      setOffWith('');
      toast.success('MFA is off');
      refresh();
    },
  });
  if (codes) return <RecoveryCodes codes={codes} doneLabel="I have saved them" onDone={() => setCodes(null)} />;
  return (
    <QueryView query={q} loading="Loading…" isEmpty={() => false} empty={null}>
      {({ me }) =>
        !me.mfaEnabled ? (
          enrolment ? (
            <EnrolmentForm enrolment={enrolment} busy={confirm.isPending} error={confirm.error ? errorMessage(confirm.error) : null} onConfirm={(c) => confirm.mutate(c)} />
          ) : (
            <div>
              <p data-testid="mfa-status">
                MFA is off: your password alone signs you in.{' '}
                {me.mfaRequired ? 'Your organisation requires MFA: you will set it up at your next sign-in.' : ''}
              </p>
              <button type="button" className="btn btn-primary" disabled={begin.isPending} onClick={() => begin.mutate()}>
                Set up MFA
              </button>
            </div>
          )
        ) : (
          <div>
            <p data-testid="mfa-status">
              MFA is on: signing in with your password also takes a code from your app. {me.mfaRecoveryCodesLeft} recovery codes left.
            </p>
            <form
              className="form-grid"
              aria-label="New recovery codes"
              onSubmit={(e) => {
                e.preventDefault();
                regenerate.mutate();
              }}
            >
              {formError(regenerate.error, ['code']) && <div className="error-box span-2">{formError(regenerate.error, ['code'])}</div>}
              <CodeField label="Code from your app" value={regenCode} onChange={setRegenCode} error={fieldErrors(regenerate.error).code} />
              <div>
                <button type="submit" className="btn" disabled={regenerate.isPending || regenCode.length !== 6}>
                  New recovery codes
                </button>
              </div>
            </form>
            {me.mfaRequired ? (
              <p className="muted">Your organisation requires MFA: it cannot be turned off.</p>
            ) : (
              <form
                className="form-grid"
                aria-label="Turn off MFA"
                onSubmit={(e) => {
                  e.preventDefault();
                  off.mutate();
                }}
              >
                {off.error && <div className="error-box span-2">{errorMessage(off.error)}</div>}
                <Field label="A code from your app, or your password">
                  {(id) => <input id={id} type="password" autoComplete="current-password" required value={offWith} onChange={(e) => setOffWith(e.target.value)} />}
                </Field>
                <div>
                  <button type="submit" className="btn btn-danger-ghost" disabled={off.isPending || !offWith}>
                    Turn off MFA
                  </button>
                </div>
              </form>
            )}
          </div>
        )
      }
    </QueryView>
  );
}
