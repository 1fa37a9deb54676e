import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { AuditEventsQuery } from '../api';
import { RecordTable, type RecordColumn } from '../components/crud';
import { EmptyState, Page, QueryView, useDebounced } from '../components/ui';
import type { AuditEventsQuery as AuditData, AuditFilter } from '../gql/graphql';
import { useCursorPages } from '../lib/cursorPages';
import { formatDateTime } from '../lib/format';
import { request } from '../lib/graphql';

type AuditEvent = AuditData['auditEvents']['nodes'][number] & { name: string };

const PAGE_SIZE = 50;

/** The actions and target types the server records (package audit), for the filters' choices. */
const actions = [
  'feed.create', 'feed.update', 'feed.enable', 'feed.disable', 'feed.delete', 'feed.reset', 'feed.run_now',
  'allowlist.add', 'allowlist.delete', 'tenant.create', 'tenant.update', 'tenant.delete',
  'tenant_group.create', 'tenant_group.update', 'tenant_group.delete', 'view.save', 'view.delete',
  'api_key.create', 'api_key.revoke', 'user.create', 'user.update', 'user.enable', 'user.disable', 'user.delete',
  'user.password_reset', 'user.mfa_reset', 'auth.sign_in', 'auth.sign_in_failed', 'auth.sso_refused', 'auth.mfa_refused',
];
const targetTypes = ['feed', 'allowlist_entry', 'tenant', 'tenant_group', 'view', 'api_key', 'user'];

/** toISO reads a datetime-local input (local time) as the API's time, or undefined when empty. */
function toISO(local: string): string | undefined {
  if (!local) return undefined;
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** fieldsText shows a record's changed fields as "name: value" pairs. */
function fieldsText(json: string): string {
  try {
    const o = JSON.parse(json) as Record<string, unknown>;
    const parts = Object.entries(o).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
    return parts.length ? parts.join(', ') : '—';
  } catch {
    return json;
  }
}

/** AuditLogPage lists the audit log, newest first, with filters by actor, action, target type and time (root only). */
export function AuditLogPage() {
  const [actorText, setActorText] = useState('');
  const [action, setAction] = useState('');
  const [targetType, setTargetType] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const actor = useDebounced(actorText.trim(), 300);
  const filter: AuditFilter = {
    actor: actor || undefined,
    action: action || undefined,
    targetType: targetType || undefined,
    from: toISO(from),
    to: toISO(to),
  };
  const pages = useCursorPages(JSON.stringify(filter), PAGE_SIZE);
  const q = useQuery({
    queryKey: ['auditEvents', filter, pages.first, pages.after],
    queryFn: () => request(AuditEventsQuery, { filter, first: pages.first, after: pages.after }),
    placeholderData: keepPreviousData,
  });
  const exportParams = new URLSearchParams();
  if (filter.actor) exportParams.set('actor', filter.actor);
  if (filter.action) exportParams.set('action', filter.action);
  if (filter.targetType) exportParams.set('target_type', filter.targetType);
  if (filter.from) exportParams.set('from', filter.from);
  if (filter.to) exportParams.set('to', filter.to);
  const columns: RecordColumn<AuditEvent>[] = [
    { header: 'Time', cell: (e) => formatDateTime(e.at) },
    { header: 'Actor', cell: (e) => e.actor },
    { header: 'Client', td: { className: 'mono' }, cell: (e) => e.client || '—' },
    { header: 'Action', td: { className: 'mono' }, cell: (e) => e.action },
    { header: 'Target', cell: (e) => (e.targetType ? `${e.targetType} ${e.targetName || e.targetId}` : '—') },
    { header: 'Changes', td: { className: 'break' }, cell: (e) => fieldsText(e.fields) },
  ];
  const exportLink = (
    <a className="btn" href={`/api/export/audit.jsonl?${exportParams.toString()}`} download>
      Export JSON lines
    </a>
  );
  return (
    <Page
      id="audit"
      title="Audit log"
      description="Every change through the API or the CLI, and every sign-in, newest first. Secrets show as ***."
      actions={exportLink}
    >
      <form className="filters-bar" role="search" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <label className="stack-label">
          Actor
          <input value={actorText} onChange={(e) => setActorText(e.target.value)} placeholder="username or cli" />
        </label>
        <label className="stack-label">
          Action
          <select value={action} onChange={(e) => setAction(e.target.value)}>
            <option value="">All actions</option>
            {actions.map((a) => (
              <option key={a}>{a}</option>
            ))}
          </select>
        </label>
        <label className="stack-label">
          Target
          <select value={targetType} onChange={(e) => setTargetType(e.target.value)}>
            <option value="">All targets</option>
            {targetTypes.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        <label className="stack-label">
          From
          <input type="datetime-local" value={from} onChange={(e) => setFrom(e.target.value)} />
        </label>
        <label className="stack-label">
          To
          <input type="datetime-local" value={to} onChange={(e) => setTo(e.target.value)} />
        </label>
      </form>
      <QueryView
        query={q}
        stale
        loading="Loading the audit log…"
        isEmpty={(d) => d.auditEvents.nodes.length === 0 && pages.pageIndex === 0}
        empty={<EmptyState title="No records match." />}
      >
        {(d) => (
          <>
            <RecordTable
              label="Audit records"
              columns={columns}
              records={d.auditEvents.nodes.map((e) => ({ ...e, name: e.action }))}
              row={(e) => ({ 'data-audit-action': e.action })}
            />
            <nav className="pager" aria-label="Pagination">
              <button type="button" className="btn btn-small" disabled={pages.pageIndex === 0} onClick={pages.prev}>
                ‹ Newer
              </button>
              <button
                type="button"
                className="btn btn-small"
                disabled={!d.auditEvents.pageInfo.hasNextPage}
                onClick={() => pages.next(d.auditEvents.pageInfo.endCursor)}
              >
                Older ›
              </button>
            </nav>
          </>
        )}
      </QueryView>
    </Page>
  );
}
