import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import {
  CreateTenantGroupMutation,
  DeleteTenantGroupMutation,
  TenantGroupsQuery,
  TenantsQuery,
  UpdateTenantGroupMutation,
} from '../api';
import { ConfirmDialog, EmptyState, ErrorBox, Field, Modal, Spinner } from '../components/ui';
import { useToast } from '../components/toast';
import type { TenantGroupFieldsFragment } from '../gql/graphql';
import { errorMessage, fieldErrors, formError } from '../lib/errors';
import { formatDateTime } from '../lib/format';
import { request } from '../lib/graphql';

/** TenantGroupsPage lists groups of tenants, with create, edit (membership) and delete. */
export function TenantGroupsPage() {
  const q = useQuery({ queryKey: ['tenantGroups'], queryFn: () => request(TenantGroupsQuery) });
  const [editing, setEditing] = useState<TenantGroupFieldsFragment | 'new' | null>(null);
  const [deleting, setDeleting] = useState<TenantGroupFieldsFragment | null>(null);
  const qc = useQueryClient();
  const toast = useToast();
  const del = useMutation({
    mutationFn: (g: TenantGroupFieldsFragment) => request(DeleteTenantGroupMutation, { id: g.id }),
    onSuccess: (_d, g) => toast.success(`Group ${g.name} deleted; its tenants remain`),
    onError: (err) => toast.error(errorMessage(err)),
    onSettled: () => {
      setDeleting(null);
      void qc.invalidateQueries({ queryKey: ['tenantGroups'] });
      void qc.invalidateQueries({ queryKey: ['tenants'] });
    },
  });

  return (
    <section className="page" aria-labelledby="groups-title">
      <div className="page-head">
        <div>
          <h1 id="groups-title">Tenant groups</h1>
          <p className="muted">Named containers of tenants.</p>
        </div>
        <button type="button" className="btn btn-primary" onClick={() => setEditing('new')}>
          + New group
        </button>
      </div>
      {q.isPending ? (
        <Spinner label="Loading groups…" />
      ) : q.error ? (
        <ErrorBox error={errorMessage(q.error)} onRetry={() => void q.refetch()} />
      ) : q.data.tenantGroups.length === 0 ? (
        <EmptyState title="No tenant groups yet.">
          <p className="muted">A group needs at least one tenant.</p>
          <button type="button" className="btn btn-primary" onClick={() => setEditing('new')}>
            Create a group
          </button>
        </EmptyState>
      ) : (
        <div className="table-wrap">
          <table className="data-table" aria-label="Tenant groups">
            <thead>
              <tr>
                <th>Name</th>
                <th>ID</th>
                <th>Tenants</th>
                <th>Updated</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {q.data.tenantGroups.map((g) => (
                <tr key={g.id} data-group-name={g.name}>
                  <td data-label="Name">
                    <span className="group-name">
                      {g.logo && <img src={g.logo} alt="" width={20} height={20} />}
                      <strong>{g.name}</strong>
                    </span>
                  </td>
                  <td data-label="ID" className="mono">{g.id}</td>
                  <td data-label="Tenants" data-testid="group-members">
                    <span className="tags">
                      {g.tenants.map((t) => (
                        <span key={t.id} className="tag">{t.name}</span>
                      ))}
                    </span>
                  </td>
                  <td data-label="Updated">{formatDateTime(g.updatedAt)}</td>
                  <td data-label="Actions">
                    <div className="row-actions">
                      <button type="button" className="btn btn-small" onClick={() => setEditing(g)} aria-label={`Edit ${g.name}`}>
                        Edit
                      </button>
                      <button type="button" className="btn btn-small btn-danger-ghost" onClick={() => setDeleting(g)} aria-label={`Delete ${g.name}`}>
                        Delete
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {editing && <GroupForm group={editing === 'new' ? undefined : editing} onClose={() => setEditing(null)} />}
      {deleting && (
        <ConfirmDialog
          title="Delete group?"
          message={`Delete ${deleting.name}? Only the group goes; its ${deleting.tenants.length} tenants remain.`}
          confirmLabel="Delete"
          danger
          busy={del.isPending}
          onCancel={() => setDeleting(null)}
          onConfirm={() => del.mutate(deleting)}
        />
      )}
    </section>
  );
}

function GroupForm(props: { group?: TenantGroupFieldsFragment; onClose: () => void }) {
  const { group } = props;
  const [name, setName] = useState(group?.name ?? '');
  const [logo, setLogo] = useState(group?.logo ?? '');
  const [members, setMembers] = useState<string[]>(group?.tenantIds ?? []);
  const tenants = useQuery({ queryKey: ['tenants'], queryFn: () => request(TenantsQuery) });
  const qc = useQueryClient();
  const toast = useToast();
  const save = useMutation({
    mutationFn: () => {
      const input = { name, logo, tenants: members };
      return group
        ? request(UpdateTenantGroupMutation, { id: group.id, input }).then((r) => r.updateTenantGroup)
        : request(CreateTenantGroupMutation, { input }).then((r) => r.createTenantGroup);
    },
    onSuccess: (g) => {
      toast.success(group ? `Group ${g.name} saved` : `Group ${g.name} created`);
      void qc.invalidateQueries({ queryKey: ['tenantGroups'] });
      void qc.invalidateQueries({ queryKey: ['tenants'] });
      props.onClose();
    },
  });
  const errs = fieldErrors(save.error);
  const top = formError(save.error, ['name', 'logo', 'tenants']);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const toggle = (id: string) => setMembers((m) => (m.includes(id) ? m.filter((x) => x !== id) : [...m, id]));

  return (
    <Modal
      title={group ? `Edit group ${group.name}` : 'New tenant group'}
      onClose={props.onClose}
      footer={
        <>
          <button type="button" className="btn" onClick={props.onClose}>Cancel</button>
          <button type="submit" form="group-form" className="btn btn-primary" disabled={save.isPending}>
            {save.isPending ? 'Saving…' : group ? 'Save' : 'Create group'}
          </button>
        </>
      }
    >
      <form id="group-form" className="form-grid" onSubmit={submit} noValidate>
        {top && <div className="error-box span-2" role="alert">{top}</div>}
        <Field label="Name" error={errs.name} hint="Required">
          {(id, d) => <input id={id} aria-describedby={d} aria-invalid={!!errs.name} required value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <Field label="Logo URL" error={errs.logo}>
          {(id, d) => <input id={id} aria-describedby={d} value={logo} onChange={(e) => setLogo(e.target.value)} />}
        </Field>
        <fieldset className="span-2 members" aria-describedby="members-hint">
          <legend>Member tenants ({members.length})</legend>
          <small id="members-hint" className="hint">
            At least one. Saving replaces the membership: unticked tenants leave the group.
          </small>
          {errs.tenants && <small className="field-error" role="alert">{errs.tenants}</small>}
          {tenants.isPending ? (
            <Spinner label="Loading tenants…" />
          ) : tenants.error ? (
            <ErrorBox error={errorMessage(tenants.error)} />
          ) : tenants.data.tenants.length === 0 ? (
            <p className="muted">No tenants exist yet: create one on the Tenants page first.</p>
          ) : (
            <div className="member-list">
              {tenants.data.tenants.map((t) => (
                <label key={t.id} className="check">
                  <input type="checkbox" checked={members.includes(t.id)} onChange={() => toggle(t.id)} />
                  {t.name}
                  {t.groupName && t.groupName !== group?.name && <span className="muted small"> (in {t.groupName})</span>}
                </label>
              ))}
            </div>
          )}
        </fieldset>
      </form>
    </Modal>
  );
}
