import { createClient, type Client } from 'graphql-ws';
import type { TypedDocumentString } from '../gql/graphql';

let client: Client | null = null;

/**
 * liveClient is the one graphql-transport-ws connection of the page. The
 * browser's session cookie authenticates the upgrade, so connection_init
 * carries no credentials.
 */
export function liveClient(): Client {
  if (!client) {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    client = createClient({
      url: `${proto}//${location.host}/graphql`,
      lazy: true,
      retryAttempts: Infinity,
      shouldRetry: () => true,
      retryWait: async (n) => new Promise((r) => setTimeout(r, Math.min(30_000, 1000 * 2 ** n))),
    });
  }
  return client;
}

/** closeLive drops the connection, e.g. on logout. */
export function closeLive(): void {
  void client?.dispose();
  client = null;
  watching = false;
}

/** subscribe runs a typed subscription until the returned function is called. */
export function subscribe<TResult, TVariables extends Record<string, unknown>>(
  document: TypedDocumentString<TResult, TVariables>,
  variables: TVariables,
  onData: (data: TResult) => void,
  onError?: (err: unknown) => void,
): () => void {
  return liveClient().subscribe<TResult>(
    { query: document.toString(), variables },
    {
      next: (msg) => {
        if (msg.data) onData(msg.data as TResult);
      },
      error: (err) => onError?.(err),
      complete: () => {},
    },
  );
}

type Listener = () => void;
const connListeners = new Set<Listener>();
let connected = false;
let watching = false;

function watchConnection() {
  if (watching) return;
  watching = true;
  const set = (v: boolean) => {
    if (connected === v) return;
    connected = v;
    connListeners.forEach((fn) => fn());
  };
  liveClient().on('connected', () => set(true));
  liveClient().on('closed', () => set(false));
  liveClient().on('error', () => set(false));
}

/**
 * liveConnection is a store for useSyncExternalStore: whether the websocket
 * is up, so pages poll only while live updates cannot reach them.
 */
export const liveConnection = {
  subscribe(fn: Listener): () => void {
    watchConnection();
    connListeners.add(fn);
    return () => connListeners.delete(fn);
  },
  get: (): boolean => connected,
};
