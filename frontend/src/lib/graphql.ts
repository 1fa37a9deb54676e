import type { TypedDocumentString } from '../gql/graphql';

/** One entry of a GraphQL response's `errors` list. */
export interface GraphQLErrorEntry {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; field?: string; [key: string]: unknown };
}

/**
 * ApiError is what every failed request throws: an HTTP failure (status set,
 * no GraphQL errors) or a GraphQL response with errors.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly errors: GraphQLErrorEntry[];

  constructor(message: string, status: number, errors: GraphQLErrorEntry[] = []) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.errors = errors;
  }

  /** code is the first machine-readable error code, or one derived from the HTTP status. */
  get code(): string {
    const c = this.errors.find((e) => e.extensions?.code)?.extensions?.code;
    if (c) return c;
    if (this.status === 401) return 'UNAUTHENTICATED';
    if (this.status === 403) return 'FORBIDDEN';
    if (this.status === 0) return 'NETWORK_ERROR';
    return 'INTERNAL_SERVER_ERROR';
  }
}

type Listener = () => void;
const unauthenticatedListeners = new Set<Listener>();

/** onUnauthenticated registers a callback for any 401, so the app can show the login page. */
export function onUnauthenticated(fn: Listener): () => void {
  unauthenticatedListeners.add(fn);
  return () => unauthenticatedListeners.delete(fn);
}

/** httpError turns a non-2xx response body ({"error":{code,message,field}}) into an ApiError. */
export function httpError(status: number, body: unknown): ApiError {
  const e = (body as { error?: { code?: string; message?: string; field?: string } } | null)?.error;
  const message = e?.message ?? `request failed with HTTP ${status}`;
  const code = status === 401 ? 'UNAUTHENTICATED' : e?.code?.toUpperCase();
  return new ApiError(message, status, [
    { message, extensions: { code, field: e?.field } },
  ]);
}

async function readJSON(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** request runs one typed GraphQL operation with the session cookie. */
export async function request<TResult, TVariables>(
  document: TypedDocumentString<TResult, TVariables>,
  ...[variables]: TVariables extends Record<string, never> ? [] : [TVariables]
): Promise<TResult> {
  let res: Response;
  try {
    res = await fetch('/graphql', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ query: document.toString(), variables }),
    });
  } catch (err) {
    throw new ApiError(`cannot reach the server: ${(err as Error).message}`, 0);
  }
  const body = (await readJSON(res)) as { data?: TResult; errors?: GraphQLErrorEntry[] } | null;
  if (res.status === 401) {
    unauthenticatedListeners.forEach((fn) => fn());
    throw httpError(401, body);
  }
  if (body?.errors?.length) {
    const err = new ApiError(body.errors.map((e) => e.message).join('; '), res.status, body.errors);
    if (err.code === 'UNAUTHENTICATED') unauthenticatedListeners.forEach((fn) => fn());
    throw err;
  }
  if (!res.ok || !body?.data) throw httpError(res.status, body);
  return body.data;
}

/** postJSON calls one of the JSON endpoints under /api (login, logout). */
export async function postJSON<T>(path: string, payload?: unknown): Promise<T | null> {
  let res: Response;
  try {
    res = await fetch(path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: payload === undefined ? undefined : JSON.stringify(payload),
    });
  } catch (err) {
    throw new ApiError(`cannot reach the server: ${(err as Error).message}`, 0);
  }
  const body = await readJSON(res);
  if (!res.ok) throw httpError(res.status, body);
  return body as T | null;
}
