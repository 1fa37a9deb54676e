import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import {
  CreateTenantGroupMutation,
  DeleteTenantGroupMutation,
  TenantGroupsQuery,
  TenantsQuery,
  UpdateTenantGroupMutation,
} from '../api';
import { RecordsPage, type RecordColumn } from '../components/crud';
import { ErrorBox, Field, FormModal, Spinner } from '../components/ui';
import { useToast } from '../components/toast';
import type { TenantGroupFieldsFragment } from '../gql/graphql';
import { errorMessage, fieldErrors, formError } from '../lib/errors';
import { formatDateTime } from '../lib/format';
import { request } from '../lib/graphql';
import { tenancyQueries } from './Tenants';

/** TenantGroupsPage lists groups of tenants, with create, edit (membership) and delete. */
export function TenantGroupsPage() {
  const q = useQuery({ queryKey: ['tenantGroups'], queryFn: () => request(TenantGroupsQuery) });
  return (
    <RecordsPage
      id="groups"
      title="Tenant groups"
      description="Named containers of tenants."
      newLabel="+ New group"
      query={q}
      records={(d) => d.tenantGroups}
      loading="Loading groups…"
      empty={{ title: 'No tenant groups yet.', note: 'A group needs at least one tenant.', createLabel: 'Create a group' }}
      table={{ label: 'Tenant groups', columns: groupColumns, row: (g) => ({ 'data-group-name': g.name }) }}
      remove={{
        remove: (g) => request(DeleteTenantGroupMutation, { id: g.id }),
        title: 'Delete group?',
        message: (g) => `Delete ${g.name}? Only the group goes; its ${g.tenants.length} tenants remain.`,
        deleted: (g) => `Group ${g.name} deleted; its tenants remain`,
        invalidate: tenancyQueries,
      }}
      form={(g, onClose) => <GroupForm group={g} onClose={onClose} />}
      canEdit
    />
  );
}

const groupColumns: RecordColumn<TenantGroupFieldsFragment>[] = [
  {
    header: 'Name',
    cell: (g) => (
      <span className="group-name">
        {g.logo && <img src={g.logo} alt="" width={20} height={20} />}
        <strong>{g.name}</strong>
      </span>
    ),
  },
  { header: 'ID', td: { className: 'mono' }, cell: (g) => g.id },
  {
    header: 'Tenants',
    td: { 'data-testid': 'group-members' },
    cell: (g) => (
      <span className="tags">
        {g.tenants.map((t) => (
          <span key={t.id} className="tag">{t.name}</span>
        ))}
      </span>
    ),
  },
  { header: 'Updated', cell: (g) => formatDateTime(g.updatedAt) },
];

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
      for (const queryKey of tenancyQueries) void qc.invalidateQueries({ queryKey });
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
  // Ticked tenants that another group holds: the server refuses them, so
  // the form says so before saving, by tenant and group name.
  const taken = (tenants.data?.tenants ?? []).filter((t) => members.includes(t.id) && t.groupName && t.groupName !== group?.name);

  return (
    <FormModal
      title={group ? `Edit group ${group.name}` : 'New tenant group'}
      onClose={props.onClose}
      form="group-form"
      submitLabel={group ? 'Save' : 'Create group'}
      busy={save.isPending}
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
          {taken.length > 0 && (
            <p className="callout-warn" role="alert" data-testid="members-taken">
              A tenant belongs to one group at most:{' '}
              {taken.map((t) => `${t.name} is in ${t.groupName}`).join('; ')}. Remove {taken.length === 1 ? 'it' : 'them'} from{' '}
              {taken.length === 1 ? 'that group' : 'those groups'} first, or untick {taken.length === 1 ? 'it' : 'them'} here.
            </p>
          )}
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
    </FormModal>
  );
}
