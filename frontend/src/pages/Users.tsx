import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { CreateUserMutation, DeleteUserMutation, ResetUserMfaMutation, ResetUserPasswordMutation, SetUserEnabledMutation, TenantsQuery, UsersQuery } from '../api';
import { useAuth } from '../auth';
import { RecordTable, useConfirmedDelete, type RecordColumn } from '../components/crud';
import { ApiKeys, ShownOnce } from '../components/secrets';
import { useToast } from '../components/toast';
import { ConfirmDialog, Drawer, EmptyState, Field, FormModal, Page, QueryView } from '../components/ui';
import type { Scope, UsersQuery as UsersData } from '../gql/graphql';
import { errorMessage, fieldErrors, formError } from '../lib/errors';
import { formatDateTime } from '../lib/format';
import { request } from '../lib/graphql';

type User = UsersData['users'][number] & { name: string };

const usersKey = ['users'];

/** UsersPage lists every user (root), with create, enable/disable, reset password, keys and delete. */
export function UsersPage() {
  const { user: me } = useAuth();
  const q = useQuery({ queryKey: usersKey, queryFn: () => request(UsersQuery) });
  const tenants = useQuery({ queryKey: ['tenants'], queryFn: () => request(TenantsQuery) });
  const tenantName = (id: string | null | undefined) => (id ? (tenants.data?.tenants.find((t) => t.id === id)?.name ?? id) : '—');
  const qc = useQueryClient();
  const toast = useToast();
  const [creating, setCreating] = useState(false);
  const [resetting, setResetting] = useState<User | null>(null);
  const [oneTime, setOneTime] = useState<{ user: string; password: string } | null>(null);
  const [keysOf, setKeysOf] = useState<User | null>(null);
  const [resettingMfa, setResettingMfa] = useState<User | null>(null);
  const del = useConfirmedDelete<User>({
    remove: (u) => request(DeleteUserMutation, { id: u.id }),
    title: 'Delete user?',
    message: (u) => `Delete ${u.username}? Their sessions and API keys end at once, and open connections close.`,
    deleted: (u) => `${u.username} deleted`,
    invalidate: [usersKey, ['tenants']],
  });
  const enable = useMutation({
    mutationFn: (v: { user: User; enabled: boolean }) => request(SetUserEnabledMutation, { id: v.user.id, enabled: v.enabled }),
    onSuccess: (_d, v) => toast.success(`${v.user.username} ${v.enabled ? 'enabled' : 'disabled'}`),
    onError: (err) => toast.error(errorMessage(err)),
    onSettled: () => void qc.invalidateQueries({ queryKey: usersKey }),
  });
  const reset = useMutation({
    mutationFn: (u: User) => request(ResetUserPasswordMutation, { id: u.id }).then((r) => r.resetUserPassword.password),
    onSuccess: (password, u) => setOneTime({ user: u.username, password }),
    onError: (err) => toast.error(errorMessage(err)),
    onSettled: () => setResetting(null),
  });
  const resetMfa = useMutation({
    mutationFn: (u: User) => request(ResetUserMfaMutation, { id: u.id }),
    onSuccess: (_d, u) => toast.success(`MFA of ${u.username} reset`),
    onError: (err) => toast.error(errorMessage(err)),
    onSettled: () => {
      setResettingMfa(null);
      void qc.invalidateQueries({ queryKey: usersKey });
    },
  });
  const columns: RecordColumn<User>[] = [
    { header: 'Username', cell: (u) => u.username },
    { header: 'Scope', cell: (u) => u.scope.toLowerCase() },
    { header: 'Tenant', cell: (u) => tenantName(u.tenantId) },
    { header: 'Status', cell: (u) => (u.enabled ? 'Enabled' : 'Disabled') },
    { header: 'Last sign-in', cell: (u) => (u.lastSignInAt ? formatDateTime(u.lastSignInAt) : 'Never') },
    { header: 'MFA', cell: (u) => (u.mfaEnabled ? 'On' : 'Off') },
    { header: 'Sign-in', cell: (u) => (u.signInMethod === 'SSO' ? 'SSO' : 'Password') },
    {
      header: 'Actions',
      cell: (u) => {
        const self = u.id === me?.id;
        return (
          <div className="row-actions">
            <button type="button" className="btn btn-small" onClick={() => setKeysOf(u)} aria-label={`API keys of ${u.username}`}>
              Keys
            </button>
            <button type="button" className="btn btn-small" onClick={() => setResetting(u)} aria-label={`Reset the password of ${u.username}`}>
              Reset password
            </button>
            {u.mfaEnabled && (
              <button type="button" className="btn btn-small" onClick={() => setResettingMfa(u)} aria-label={`Reset the MFA of ${u.username}`}>
                Reset MFA
              </button>
            )}
            <button
              type="button"
              className="btn btn-small"
              disabled={self || enable.isPending}
              onClick={() => enable.mutate({ user: u, enabled: !u.enabled })}
              aria-label={`${u.enabled ? 'Disable' : 'Enable'} ${u.username}`}
            >
              {u.enabled ? 'Disable' : 'Enable'}
            </button>
            <button type="button" className="btn btn-small btn-danger-ghost" disabled={self} onClick={() => del.ask(u)} aria-label={`Delete ${u.username}`}>
              Delete
            </button>
          </div>
        );
      },
    },
  ];
  const add = (
    <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
      + New user
    </button>
  );
  return (
    <Page id="users" title="Users" description="Who signs in to tifeeds: root users run the service, tenant users see their tenant." actions={add}>
      <QueryView query={q} loading="Loading the users…" isEmpty={(d) => d.users.length === 0} empty={<EmptyState title="No users." />}>
        {(d) => (
          <RecordTable
            label="Users"
            columns={columns}
            records={d.users.map((u) => ({ ...u, name: u.username }))}
            row={(u) => ({ 'data-username': u.username })}
          />
        )}
      </QueryView>
      {creating && <CreateUserForm tenants={tenants.data?.tenants ?? []} onClose={() => setCreating(false)} />}
      {resetting && (
        <ConfirmDialog
          title="Reset password?"
          message={`${resetting.username} gets a one-time password, shown to you once; their sessions end and they choose a new password at the next sign-in.`}
          confirmLabel="Reset password"
          busy={reset.isPending}
          onCancel={() => setResetting(null)}
          onConfirm={() => reset.mutate(resetting)}
        />
      )}
      {resettingMfa && (
        <ConfirmDialog
          title="Reset MFA?"
          message={`${resettingMfa.username}'s authenticator and recovery codes stop working. If their tenant requires MFA, they set it up again at their next sign-in; otherwise their password alone signs them in.`}
          confirmLabel="Reset MFA"
          busy={resetMfa.isPending}
          onCancel={() => setResettingMfa(null)}
          onConfirm={() => resetMfa.mutate(resettingMfa)}
        />
      )}
      {oneTime && (
        <ShownOnce
          title={`One-time password of ${oneTime.user}`}
          label="One-time password"
          secret={oneTime.password}
          note="Give this password to the user by a safe channel: it is shown this once. They must choose a new one when they sign in with it."
          onClose={() => setOneTime(null)}
        />
      )}
      {keysOf && (
        <Drawer title={`API keys of ${keysOf.username}`} onClose={() => setKeysOf(null)}>
          <ApiKeys userId={keysOf.id} />
        </Drawer>
      )}
      {del.dialog}
    </Page>
  );
}

function CreateUserForm(props: { tenants: { id: string; name: string }[]; onClose: () => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [scope, setScope] = useState<Scope>('TENANT');
  const [tenantId, setTenantId] = useState('');
  const qc = useQueryClient();
  const toast = useToast();
  const save = useMutation({
    mutationFn: () =>
      request(CreateUserMutation, { input: { username, password, scope, tenantId: scope === 'TENANT' ? tenantId || null : null } }).then((r) => r.createUser),
    onSuccess: (u) => {
      toast.success(`${u.username} created`);
      void qc.invalidateQueries({ queryKey: usersKey });
      void qc.invalidateQueries({ queryKey: ['tenants'] });
      props.onClose();
    },
  });
  const errs = fieldErrors(save.error);
  const top = formError(save.error, ['username', 'password', 'scope', 'tenantId']);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <FormModal title="New user" onClose={props.onClose} form="user-form" submitLabel="Create user" busy={save.isPending}>
      <form id="user-form" className="form-grid" onSubmit={submit} noValidate>
        {top && (
          <div className="error-box span-2" role="alert">
            {top}
          </div>
        )}
        <Field label="Username" error={errs.username} hint="No spaces or ':' (at most 64 characters).">
          {(id, d) => (
            <input id={id} aria-describedby={d} aria-invalid={!!errs.username} required autoComplete="off" value={username} onChange={(e) => setUsername(e.target.value)} />
          )}
        </Field>
        <Field label="Password" error={errs.password} hint="At least 8 characters.">
          {(id, d) => (
            <input
              id={id}
              type="password"
              aria-describedby={d}
              aria-invalid={!!errs.password}
              required
              autoComplete="new-password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
          )}
        </Field>
        <Field label="Scope" error={errs.scope} hint="Root users run the service; tenant users see their tenant, read-only.">
          {(id, d) => (
            <select id={id} aria-describedby={d} value={scope} onChange={(e) => setScope(e.target.value as Scope)}>
              <option value="TENANT">Tenant</option>
              <option value="ROOT">Root</option>
            </select>
          )}
        </Field>
        {scope === 'TENANT' && (
          <Field label="Tenant" error={errs.tenantId}>
            {(id, d) => (
              <select id={id} aria-describedby={d} aria-invalid={!!errs.tenantId} value={tenantId} onChange={(e) => setTenantId(e.target.value)}>
                <option value="">Choose a tenant…</option>
                {props.tenants.map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
        )}
      </form>
    </FormModal>
  );
}
