import { useState, type FormEvent } from 'react';
import { Field } from '../components/ui';

/**
 * ssoLoginPath is where a sign-in through an organisation's identity provider
 * starts: the server sends the browser on to the IdP (SAML, HTTP-Redirect) and,
 * once the IdP answers, back to the dashboard signed in.
 */
export function ssoLoginPath(organisation: string): string {
  return `/saml/${encodeURIComponent(organisation.trim())}/login`;
}

/** SSOSignIn offers "Sign in with SSO" by organisation (the tenant's id) beside the password form. */
export function SSOSignIn() {
  const [organisation, setOrganisation] = useState('');

  function submit(e: FormEvent) {
    e.preventDefault();
    if (!organisation.trim()) return;
    // A full navigation: the server answers with a redirect to the IdP.
    window.location.assign(ssoLoginPath(organisation));
  }

  return (
    <form className="login card sso-sign-in" onSubmit={submit} aria-labelledby="sso-title">
      <h2 id="sso-title">Sign in with SSO</h2>
      <Field label="Organisation" hint="Your organisation's id in tifeeds, from your administrator.">
        {(id, describedBy) => (
          <input id={id} name="organisation" autoComplete="organization" required aria-describedby={describedBy}
            value={organisation} onChange={(e) => setOrganisation(e.target.value)} />
        )}
      </Field>
      {/* Not "Sign in…": the password form's button is the page's one "Sign in". */}
      <button type="submit" className="btn btn-block">
        Continue with SSO
      </button>
    </form>
  );
}
