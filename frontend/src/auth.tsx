import { useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, useEffect, type ReactNode } from 'react';
import { MeQuery } from './api';
import type { MeQuery as Me } from './gql/graphql';
import { isUnavailable } from './lib/errors';
import { ApiError, onUnauthenticated, postJSON, request } from './lib/graphql';

interface AuthState {
  user: Me['me'] | null;
  loading: boolean;
  error: unknown;
  login(username: string, password: string): Promise<void>;
  logout(): Promise<void>;
}

const AuthContext = createContext<AuthState | null>(null);

/** AuthProvider knows the signed-in user from `me`; a 401 anywhere signs the dashboard out. */
export function AuthProvider({ children }: { children: ReactNode }) {
  const qc = useQueryClient();
  const me = useQuery({
    queryKey: ['me'],
    queryFn: async () => {
      try {
        return (await request(MeQuery)).me;
      } catch (err) {
        if (err instanceof ApiError && err.code === 'UNAUTHENTICATED') return null;
        throw err;
      }
    },
    staleTime: Infinity,
    // Only a database outage passes; any other failure stands.
    retry: (n, err) => isUnavailable(err) && n < 5,
  });

  useEffect(
    () =>
      onUnauthenticated(() => {
        if (qc.getQueryData(['me'])) qc.setQueryData(['me'], null);
      }),
    [qc],
  );

  const state: AuthState = {
    user: me.data ?? null,
    loading: me.isPending,
    error: me.error,
    async login(username, password) {
      await postJSON('/api/login', { username, password });
      const { me } = await request(MeQuery);
      // Drop what another user may have loaded; keep the `me` query itself,
      // whose observers a clear() would orphan.
      qc.removeQueries({ predicate: (q) => q.queryKey[0] !== 'me' });
      qc.setQueryData(['me'], me);
    },
    async logout() {
      try {
        await postJSON('/api/logout');
      } finally {
        qc.removeQueries({ predicate: (q) => q.queryKey[0] !== 'me' });
        qc.setQueryData(['me'], null);
      }
    },
  };
  return <AuthContext.Provider value={state}>{children}</AuthContext.Provider>;
}

/** useAuth gives the signed-in user and the login/logout actions. */
export function useAuth(): AuthState {
  const ctx = useContext(AuthContext);
  if (!ctx) throw new Error('useAuth outside AuthProvider');
  return ctx;
}
