import { ApiError } from './graphql';

/** FieldErrors maps an input field name (as the API names it) to its message. */
export type FieldErrors = Record<string, string>;

const codeText: Record<string, string> = {
  UNAUTHENTICATED: 'Your session has ended. Please sign in again.',
  FORBIDDEN: 'You are not allowed to do this.',
  NOT_FOUND: 'It no longer exists.',
  NETWORK_ERROR: 'The server cannot be reached.',
  UNAVAILABLE: 'The database is unavailable for now; retrying. A change can be tried again once it is back.',
};

/**
 * isUnavailable reports whether err says the database cannot be used for
 * now: GraphQL's UNAVAILABLE or REST's 503 database_unavailable. It passes,
 * so reads are retried rather than shown as a failure.
 */
export function isUnavailable(err: unknown): boolean {
  return err instanceof ApiError && (err.code === 'UNAVAILABLE' || err.code === 'DATABASE_UNAVAILABLE');
}

/** errorMessage gives one human sentence for any thrown value. */
export function errorMessage(err: unknown): string {
  if (isUnavailable(err)) return codeText.UNAVAILABLE;
  if (err instanceof ApiError) {
    const messages = err.errors.map((e) => e.message).filter(Boolean);
    if (messages.length) return dedupe(messages).join('; ');
    return err.message || codeText[err.code] || 'Request failed.';
  }
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * fieldErrors collects BAD_USER_INPUT errors that name a field, keyed by the
 * field's last path segment ("input.pollingFrequency" -> "pollingFrequency"),
 * so forms can show each message beside its field.
 */
export function fieldErrors(err: unknown): FieldErrors {
  const out: FieldErrors = {};
  if (!(err instanceof ApiError)) return out;
  for (const e of err.errors) {
    const field = e.extensions?.field;
    if (!field || (e.extensions?.code && e.extensions.code !== 'BAD_USER_INPUT')) continue;
    const key = normaliseField(field);
    const msg = withoutFieldPrefix(e.message, field);
    out[key] = out[key] ? `${out[key]}; ${msg}` : msg;
  }
  return out;
}

/** formError is the message to show above a form: errors not tied to a shown field. */
export function formError(err: unknown, shownFields: readonly string[]): string | null {
  if (!err) return null;
  if (!(err instanceof ApiError)) return errorMessage(err);
  const fields = fieldErrors(err);
  const rest = err.errors.filter((e) => {
    const f = e.extensions?.field;
    return !f || !shownFields.includes(normaliseField(f)) || !fields[normaliseField(f)];
  });
  if (err.errors.length === 0) return errorMessage(err);
  if (rest.length === 0) return null;
  return dedupe(rest.map((e) => e.message)).join('; ');
}

/**
 * normaliseField turns "input.ssoConfig.issuerUrl", "sso_config.issuer_url"
 * or an enum-style "API_KEY" (a PremiumFeedField) into "issuerUrl" / "apiKey".
 */
export function normaliseField(field: string): string {
  let last = field.split('.').pop() ?? field;
  if (/^[A-Z][A-Z0-9_]*$/.test(last)) last = last.toLowerCase();
  return last.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * withoutFieldPrefix drops the "field: " the server puts before a validation
 * message: beside its input, the label already names the field.
 */
export function withoutFieldPrefix(message: string, field: string): string {
  for (const f of [field, field.split('.').pop() ?? field]) {
    if (f && message.startsWith(`${f}: `)) return message.slice(f.length + 2);
  }
  return message;
}

/**
 * labelledErrorMessage is errorMessage with each field-bound message led by
 * the field's label ("API key must be set …"), for toasts far from a form.
 * A field without a label (not a form input) leaves just its message.
 */
export function labelledErrorMessage(err: unknown, label: (key: string) => string | undefined): string {
  if (!(err instanceof ApiError) || err.errors.length === 0) return errorMessage(err);
  const parts = err.errors.map((e) => {
    const field = e.extensions?.field;
    if (!field) return e.message;
    const name = label(normaliseField(field));
    const msg = withoutFieldPrefix(e.message, field);
    return name ? `${name} ${msg}` : msg;
  });
  return dedupe(parts).join('; ');
}

/** isUnauthenticated reports whether err means the session is gone. */
export function isUnauthenticated(err: unknown): boolean {
  return err instanceof ApiError && err.code === 'UNAUTHENTICATED';
}

function dedupe(xs: string[]): string[] {
  return [...new Set(xs)];
}
