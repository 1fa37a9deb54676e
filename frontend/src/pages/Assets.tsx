import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { AddTenantAssetsMutation, AssetHitsQuery, DeleteTenantAssetsMutation, ImportTenantAssetsCsvMutation, TenantAssetsQuery, TenantsQuery } from '../api';
import { useAuth } from '../auth';
import { RecordTable, useConfirmedDelete } from '../components/crud';
import { CursorPager, EmptyState, Field, FormModal, Page, QueryView } from '../components/ui';
import { useToast } from '../components/toast';
import type { TenantAssetsQuery as AssetsData } from '../gql/graphql';
import { useCursorPages } from '../lib/cursorPages';
import { fieldErrors, formError } from '../lib/errors';
import { formatDateTime } from '../lib/format';
import { request } from '../lib/graphql';
import { isRoot } from '../lib/roles';

type Asset = AssetsData['tenantAssets']['nodes'][number] & { name: string };

const kindLabels: Record<Asset['kind'], string> = {
  IP: 'IP address',
  CIDR: 'CIDR range',
  DOMAIN: 'Domain and subdomains',
  URL_PREFIX: 'URL prefix',
};

const pageSize = 100;

/** useTenantChoice is the tenant a page shows: root picks one, a tenant's user has theirs. */
function useTenantChoice() {
  const tenants = useQuery({ queryKey: ['tenants'], queryFn: () => request(TenantsQuery) });
  const list = tenants.data?.tenants ?? [];
  const [picked, setPicked] = useState('');
  const tenantId = picked || list[0]?.id || '';
  const select =
    list.length > 1 ? (
      <label className="inline-field">
        Tenant{' '}
        <select value={tenantId} onChange={(e) => setPicked(e.target.value)}>
          {list.map((t) => (
            <option key={t.id} value={t.id}>
              {t.name}
            </option>
          ))}
        </select>
      </label>
    ) : null;
  return { tenantId, select, tenants: list, loading: tenants.isPending };
}

/** AssetsPage lists a tenant's watched assets: add (one per line or a CSV file), delete. */
export function AssetsPage() {
  const { tenantId, select, loading } = useTenantChoice();
  // Another tenant starts again at its first page.
  const pages = useCursorPages(tenantId, pageSize);
  const key = ['tenantAssets', tenantId, pages.after];
  const q = useQuery({
    queryKey: key,
    queryFn: () => request(TenantAssetsQuery, { tenantId, first: pages.first, after: pages.after }),
    enabled: !!tenantId,
  });
  const [adding, setAdding] = useState(false);
  const del = useConfirmedDelete<Asset>({
    remove: (a) => request(DeleteTenantAssetsMutation, { tenantId, values: [a.value] }),
    title: 'Stop watching?',
    message: (a) => `Stop watching ${a.value}? Its hits are forgotten.`,
    deleted: (a) => `${a.value} is no longer watched`,
    invalidate: [['tenantAssets']],
  });
  const actions = (
    <>
      {select}
      <button type="button" className="btn btn-primary" onClick={() => setAdding(true)} disabled={!tenantId}>
        + Add assets
      </button>
    </>
  );
  return (
    <Page
      id="assets"
      title="Assets"
      description="What the tenant owns: IP addresses, CIDR ranges, domains (with their subdomains) and URL prefixes. An ingested indicator that covers one is an asset hit."
      actions={actions}
    >
      {!tenantId && !loading ? (
        <EmptyState title="No tenant yet." />
      ) : (
        <QueryView
          query={q}
          loading="Loading the assets…"
          isEmpty={(d) => d.tenantAssets.totalCount === 0}
          empty={<EmptyState title="No assets watched yet." />}
        >
          {(d) => (
            <>
              <p className="muted">{d.tenantAssets.totalCount} assets watched (at most 100,000).</p>
              <RecordTable
                label="Assets"
                records={d.tenantAssets.nodes.map((a) => ({ ...a, name: a.value }))}
                row={(a) => ({ 'data-asset-value': a.value })}
                columns={[
                  { header: 'Value', td: { className: 'mono break' }, cell: (a) => a.value },
                  { header: 'Kind', cell: (a) => kindLabels[a.kind] },
                  { header: 'Added', cell: (a) => formatDateTime(a.createdAt) },
                  {
                    header: 'Actions',
                    cell: (a) => (
                      <button type="button" className="btn btn-small btn-danger-ghost" onClick={() => del.ask(a)} aria-label={`Delete ${a.value}`}>
                        Delete
                      </button>
                    ),
                  },
                ]}
              />
              <CursorPager pages={pages} connection={d.tenantAssets} noun="assets" />
            </>
          )}
        </QueryView>
      )}
      {adding && <AddAssetsForm tenantId={tenantId} onClose={() => setAdding(false)} />}
      {del.dialog}
    </Page>
  );
}

/** csvChunks splits a CSV's lines into parts under the server's request size. */
function csvChunks(text: string, max = 900_000): string[] {
  const out: string[] = [];
  let cur = '';
  for (const line of text.split(/\r?\n/)) {
    if (cur.length + line.length + 1 > max && cur) {
      out.push(cur);
      cur = '';
    }
    cur += line + '\n';
  }
  if (cur.trim()) out.push(cur);
  return out;
}

function AddAssetsForm(props: { tenantId: string; onClose: () => void }) {
  const [values, setValues] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const qc = useQueryClient();
  const toast = useToast();
  const save = useMutation({
    mutationFn: async () => {
      let added = 0;
      const lines = values.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);
      for (let i = 0; i < lines.length; i += 20000) {
        const r = await request(AddTenantAssetsMutation, { tenantId: props.tenantId, values: lines.slice(i, i + 20000) });
        added += r.addTenantAssets.added;
      }
      if (file) {
        for (const csv of csvChunks(await file.text())) {
          const r = await request(ImportTenantAssetsCsvMutation, { tenantId: props.tenantId, csv });
          added += r.importTenantAssetsCsv.added;
        }
      }
      return added;
    },
    onSuccess: (added) => {
      toast.success(added === 1 ? '1 asset added' : `${added} assets added`);
      void qc.invalidateQueries({ queryKey: ['tenantAssets'] });
      props.onClose();
    },
  });
  const errs = fieldErrors(save.error);
  const top = formError(save.error, ['values', 'csv']);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <FormModal title="Add assets" onClose={props.onClose} form="assets-form" submitLabel="Add" busy={save.isPending}>
      <form id="assets-form" className="form-grid" onSubmit={submit} noValidate>
        {top && (
          <div className="error-box span-2" role="alert">
            {top}
          </div>
        )}
        <Field
          label="Values"
          error={errs.values}
          hint="One per line: an IP address, a CIDR range, a domain (covers its subdomains) or a URL prefix with its scheme."
        >
          {(id, d) => (
            <textarea id={id} aria-describedby={d} aria-invalid={!!errs.values} rows={6} value={values} onChange={(e) => setValues(e.target.value)} />
          )}
        </Field>
        <Field label="CSV file" error={errs.csv} hint="The first column is the value; a header row is skipped.">
          {(id, d) => <input id={id} aria-describedby={d} type="file" accept=".csv,text/csv,text/plain" onChange={(e) => setFile(e.target.files?.[0] ?? null)} />}
        </Field>
      </form>
    </FormModal>
  );
}

/** AssetHitsPage lists asset hits, newest first: a tenant's users see theirs, root every tenant's. */
export function AssetHitsPage() {
  const { user } = useAuth();
  const root = isRoot(user?.scope);
  const { tenants } = useTenantChoice();
  const pages = useCursorPages('', pageSize);
  const q = useQuery({
    queryKey: ['assetHits', pages.after],
    queryFn: () => request(AssetHitsQuery, { first: pages.first, after: pages.after }),
    refetchInterval: 10000,
  });
  const tenantName = (id: string) => tenants.find((t) => t.id === id)?.name ?? id;
  return (
    <Page
      id="asset-hits"
      title="Asset hits"
      description={
        root
          ? 'Ingested indicators that cover a tenant’s assets, every tenant’s, newest first.'
          : 'Ingested indicators that cover your tenant’s assets, newest first.'
      }
    >
      <QueryView
        query={q}
        loading="Loading the hits…"
        isEmpty={(d) => d.assetHits.nodes.length === 0}
        empty={<EmptyState title="No hits yet." />}
      >
        {(d) => (
          <>
            <RecordTable
              label="Asset hits"
              records={d.assetHits.nodes}
              row={(h) => ({ 'data-hit-value': h.iocValue })}
              columns={[
                { header: 'Time', cell: (h) => formatDateTime(h.at) },
                ...(root ? [{ header: 'Tenant', cell: (h: (typeof d.assetHits.nodes)[number]) => tenantName(h.tenantId) }] : []),
                { header: 'Asset', td: { className: 'mono break' }, cell: (h) => h.asset },
                { header: 'Indicator', td: { className: 'mono break' }, cell: (h) => `${h.iocType} ${h.iocValue}` },
                { header: 'Score', num: true, cell: (h) => h.score },
                { header: 'Tags', cell: (h) => h.tags.join(', ') || '—' },
                { header: 'Feed', cell: (h) => h.feedName },
                { header: 'Expires', cell: (h) => formatDateTime(h.expiresAt) },
              ]}
            />
            <nav className="pager" aria-label="Pages">
              <button type="button" className="btn btn-small" disabled={pages.pageIndex === 0} onClick={pages.prev}>
                Previous
              </button>
              <button
                type="button"
                className="btn btn-small"
                disabled={!d.assetHits.pageInfo.hasNextPage}
                onClick={() => pages.next(d.assetHits.pageInfo.endCursor)}
              >
                Next
              </button>
            </nav>
          </>
        )}
      </QueryView>
    </Page>
  );
}
