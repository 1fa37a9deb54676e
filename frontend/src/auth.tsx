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
  /**
   * login checks the password. It signs in and answers null, or, for a user
   * with MFA on (or who must enrol), answers the second step to take.
   */
  login(username: string, password: string): Promise<MfaStep | null>;
  /**
   * finishMfa sends the second step (a code or a recovery code); the session
   * starts. It answers the recovery codes of an enrolment (else []): the
   * caller shows them, then calls enter().
   */
  finishMfa(token: string, answer: { code: string } | { recovery_code: string }): Promise<string[]>;
  /** enter loads the signed-in user, which leaves the login page. */
  enter(): Promise<void>;
  logout(): Promise<void>;
}

/** MfaStep is what a password sign-in asks next: a code, or enrolment. */
export interface MfaStep {
  token: string;
  enrol: boolean;
}

interface LoginAnswer {
  mfa_required?: boolean;
  mfa_enrolment_required?: boolean;
  mfa_token?: string;
  recovery_codes?: string[];
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
      const a = await postJSON<LoginAnswer>('/api/login', { username, password });
      if (a?.mfa_token) return { token: a.mfa_token, enrol: !!a.mfa_enrolment_required };
      await state.enter();
      return null;
    },
    async finishMfa(token, answer) {
      const a = await postJSON<LoginAnswer>('/api/login/mfa', { mfa_token: token, ...answer });
      return a?.recovery_codes ?? [];
    },
    async enter() {
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
