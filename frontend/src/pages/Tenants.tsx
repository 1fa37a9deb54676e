import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { CreateTenantMutation, DeleteTenantMutation, TenantsQuery, UpdateTenantMutation } from '../api';
import { RecordsPage, type RecordColumn } from '../components/crud';
import { Field, FormModal } from '../components/ui';
import { useToast } from '../components/toast';
import type { TenantFieldsFragment, TenantInput } from '../gql/graphql';
import { fieldErrors, formError } from '../lib/errors';
import { enumWords, formatDateTime } from '../lib/format';
import { request } from '../lib/graphql';
import { isRoot } from '../lib/roles';
import { useAuth } from '../auth';

/** TenantsPage lists the MSSP's tenants, with create, edit and delete; a tenant user sees their own, read-only. */
export function TenantsPage() {
  const { user } = useAuth();
  const root = isRoot(user?.scope);
  const q = useQuery({ queryKey: ['tenants'], queryFn: () => request(TenantsQuery) });
  return (
    <RecordsPage
      id="tenants"
      title="Tenants"
      description={
        root
          ? 'Customers served, with their contact, authentication and ingestion settings.'
          : 'Your tenant, with its contact, authentication and ingestion settings. Root users change them.'
      }
      canEdit={root}
      newLabel="+ New tenant"
      query={q}
      records={(d) => d.tenants}
      loading="Loading tenants…"
      empty={{ title: 'No tenants yet.', createLabel: 'Create the first tenant' }}
      table={{ label: 'Tenants', columns: tenantColumns, row: (t) => ({ 'data-tenant-name': t.name }) }}
      remove={{
        remove: (t) => request(DeleteTenantMutation, { id: t.id }),
        title: 'Delete tenant?',
        message: (t) => `Delete ${t.name}? If it is the last tenant of its group, the group is deleted too.`,
        deleted: (t) => `Tenant ${t.name} deleted`,
        invalidate: tenancyQueries,
      }}
      form={(t, onClose) => <TenantForm tenant={t} onClose={onClose} />}
    />
  );
}

const tenantColumns: RecordColumn<TenantFieldsFragment>[] = [
  { header: 'Name', cell: (t) => <strong>{t.name}</strong> },
  { header: 'ID', td: { className: 'mono' }, cell: (t) => t.id },
  {
    header: 'Contact',
    cell: (t) => (
      <>
        {t.contact}
        {t.contactEmail && <div className="muted small">{t.contactEmail}</div>}
      </>
    ),
  },
  { header: 'Group', cell: (t) => t.groupName || <span className="muted">—</span> },
  {
    header: 'Authentication',
    cell: (t) => (
      <>
        {enumWords(t.authenticationMethod)}
        {t.mfaEnabled && <span className="badge">MFA</span>}
      </>
    ),
  },
  { header: 'Users', num: true, cell: (t) => t.userNum },
  { header: 'Created', cell: (t) => formatDateTime(t.createdAt) },
];

/** tenancyQueries are the queries a change of a tenant or a group makes stale: each lists the other. */
export const tenancyQueries = [['tenants'], ['tenantGroups']];

interface Values {
  name: string;
  contact: string;
  contactEmail: string;
  contactPhone: string;
  address: string;
  info: string;
  retentionGroup: string;
  mfaEnabled: boolean;
  authenticationMethod: string;
  ingestionLimit: string;
  sso: {
    allowClockSkew: boolean;
    idpCertificate: string;
    idpMetadata: string;
    idpCallbackType: string;
    issuerUrl: string;
    ssoConfigMethod: string;
    ssoEntryPoint: string;
  };
}

function initial(t?: TenantFieldsFragment): Values {
  const s = t?.ssoConfig;
  return {
    name: t?.name ?? '',
    contact: t?.contact ?? '',
    contactEmail: t?.contactEmail ?? '',
    contactPhone: t?.contactPhone ?? '',
    address: t?.address ?? '',
    info: t?.info ?? '',
    retentionGroup: t?.retentionGroup ?? '',
    mfaEnabled: t?.mfaEnabled ?? false,
    authenticationMethod: t?.authenticationMethod || 'system_default',
    ingestionLimit: t?.ingestionLimit == null ? '' : String(t.ingestionLimit),
    sso: {
      allowClockSkew: s?.allowClockSkew ?? false,
      idpCertificate: s?.idpCertificate ?? '',
      idpMetadata: s?.idpMetadata ?? '',
      idpCallbackType: s?.idpCallbackType ?? '',
      issuerUrl: s?.issuerUrl ?? '',
      ssoConfigMethod: s?.ssoConfigMethod || 'metadata',
      ssoEntryPoint: s?.ssoEntryPoint ?? '',
    },
  };
}

/** tenantInput turns the form into the API's TenantInput; SSO settings go only with SAML. */
export function tenantInput(v: Values): TenantInput {
  const input: TenantInput = {
    name: v.name,
    contact: v.contact,
    contactEmail: v.contactEmail,
    contactPhone: v.contactPhone,
    address: v.address,
    info: v.info,
    retentionGroup: v.retentionGroup,
    mfaEnabled: v.mfaEnabled,
    authenticationMethod: v.authenticationMethod,
  };
  if (v.ingestionLimit.trim() !== '') input.ingestionLimit = Number(v.ingestionLimit);
  if (v.authenticationMethod === 'sso_saml') input.ssoConfig = { ...v.sso };
  return input;
}

const shownFields = ['name', 'contact', 'contactEmail', 'contactPhone', 'address', 'info', 'retentionGroup', 'mfaEnabled', 'authenticationMethod', 'ingestionLimit', 'allowClockSkew', 'idpCertificate', 'idpMetadata', 'idpCallbackType', 'issuerUrl', 'ssoConfigMethod', 'ssoEntryPoint'];

function TenantForm(props: { tenant?: TenantFieldsFragment; onClose: () => void }) {
  const { tenant } = props;
  const [v, setV] = useState<Values>(() => initial(tenant));
  const qc = useQueryClient();
  const toast = useToast();
  const save = useMutation({
    mutationFn: () =>
      tenant
        ? request(UpdateTenantMutation, { id: tenant.id, input: tenantInput(v) }).then((r) => r.updateTenant)
        : request(CreateTenantMutation, { input: tenantInput(v) }).then((r) => r.createTenant),
    onSuccess: (t) => {
      toast.success(tenant ? `Tenant ${t.name} saved` : `Tenant ${t.name} created`);
      for (const queryKey of tenancyQueries) void qc.invalidateQueries({ queryKey });
      props.onClose();
    },
  });
  const errs = fieldErrors(save.error);
  const top = formError(save.error, shownFields);
  const text = (k: Exclude<keyof Values, 'mfaEnabled' | 'sso'>) => (e: { target: { value: string } }) => setV((s) => ({ ...s, [k]: e.target.value }));
  const sso = (k: Exclude<keyof Values['sso'], 'allowClockSkew'>) => (e: { target: { value: string } }) =>
    setV((s) => ({ ...s, sso: { ...s.sso, [k]: e.target.value } }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const input = (label: string, k: Exclude<keyof Values, 'mfaEnabled' | 'sso'>, type = 'text', hint?: string) => (
    <Field label={label} error={errs[k]} hint={hint}>
      {(id, d) => <input id={id} aria-describedby={d} aria-invalid={!!errs[k]} type={type} value={v[k]} onChange={text(k)} required={k === 'name'} />}
    </Field>
  );

  return (
    <FormModal
      title={tenant ? `Edit tenant ${tenant.name}` : 'New tenant'}
      wide
      onClose={props.onClose}
      form="tenant-form"
      submitLabel={tenant ? 'Save' : 'Create tenant'}
      busy={save.isPending}
    >
      <form id="tenant-form" className="form-grid" onSubmit={submit} noValidate>
        {top && <div className="error-box span-2" role="alert">{top}</div>}
        {input('Name', 'name', 'text', 'Required')}
        {input('Contact', 'contact')}
        {input('Contact email', 'contactEmail', 'email')}
        {input('Contact phone', 'contactPhone', 'tel')}
        <div className="span-2">{input('Address', 'address')}</div>
        <div className="span-2">
          <Field label="Info" error={errs.info}>
            {(id, d) => <textarea id={id} aria-describedby={d} rows={2} value={v.info} onChange={text('info')} />}
          </Field>
        </div>
        {input('Retention group', 'retentionGroup', 'text', 'Not available on managed (SaaS) editions')}
        {input('Ingestion limit', 'ingestionLimit', 'number')}
        <Field label="Authentication method" error={errs.authenticationMethod}>
          {(id, d) => (
            <select id={id} aria-describedby={d} value={v.authenticationMethod} onChange={text('authenticationMethod')}>
              <option value="system_default">System default</option>
              <option value="sso_saml">SSO (SAML)</option>
            </select>
          )}
        </Field>
        <label className="check align-end">
          <input type="checkbox" checked={v.mfaEnabled} onChange={(e) => setV((s) => ({ ...s, mfaEnabled: e.target.checked }))} />
          MFA enabled
        </label>
        {v.authenticationMethod === 'sso_saml' && (
          <fieldset className="span-2 subsection form-grid">
            <legend>SSO configuration</legend>
            <Field label="Configuration method" error={errs.ssoConfigMethod}>
              {(id, d) => <input id={id} aria-describedby={d} value={v.sso.ssoConfigMethod} onChange={sso('ssoConfigMethod')} />}
            </Field>
            <Field label="IdP callback type" error={errs.idpCallbackType}>
              {(id, d) => <input id={id} aria-describedby={d} value={v.sso.idpCallbackType} onChange={sso('idpCallbackType')} />}
            </Field>
            <Field label="Issuer URL" error={errs.issuerUrl}>
              {(id, d) => <input id={id} aria-describedby={d} type="url" value={v.sso.issuerUrl} onChange={sso('issuerUrl')} />}
            </Field>
            <Field label="SSO entry point" error={errs.ssoEntryPoint}>
              {(id, d) => <input id={id} aria-describedby={d} type="url" value={v.sso.ssoEntryPoint} onChange={sso('ssoEntryPoint')} />}
            </Field>
            <div className="span-2">
              <Field label="IdP metadata" error={errs.idpMetadata}>
                {(id, d) => <textarea id={id} aria-describedby={d} rows={3} className="mono" value={v.sso.idpMetadata} onChange={sso('idpMetadata')} />}
              </Field>
            </div>
            <div className="span-2">
              <Field label="IdP certificate" error={errs.idpCertificate}>
                {(id, d) => <textarea id={id} aria-describedby={d} rows={3} className="mono" value={v.sso.idpCertificate} onChange={sso('idpCertificate')} />}
              </Field>
            </div>
            <label className="check span-2">
              <input type="checkbox" checked={v.sso.allowClockSkew} onChange={(e) => setV((s) => ({ ...s, sso: { ...s.sso, allowClockSkew: e.target.checked } }))} />
              Allow clock skew
            </label>
          </fieldset>
        )}
      </form>
    </FormModal>
  );
}
