import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import {
  AddAllowlistEntryMutation,
  AllowlistEntriesQuery,
  DeleteAllowlistEntryMutation,
  DeleteWarninglistMutation,
  ImportWarninglistMutation,
  SetWarninglistActionMutation,
  SubscribeWarninglistMutation,
  WarninglistsQuery,
} from '../api';
import { RecordTable, useConfirmedDelete, type RecordColumn } from '../components/crud';
import { EmptyState, Field, FormModal, Page, QueryView } from '../components/ui';
import { useToast } from '../components/toast';
import type { AllowlistEntriesQuery as EntriesData, WarninglistAction, WarninglistsQuery as ListsData } from '../gql/graphql';
import { fieldErrors, formError } from '../lib/errors';
import { formatDateTime } from '../lib/format';
import { request } from '../lib/graphql';

type Entry = EntriesData['allowlistEntries'][number] & { name: string };

const entriesKey = ['allowlistEntries'];

const kindLabels: Record<Entry['kind'], string> = {
  IP: 'IP address',
  CIDR: 'CIDR range',
  DOMAIN: 'Domain and subdomains',
  URL_PREFIX: 'URL prefix',
};

/** AllowlistPage lists the operator's allowlist entries, with add and delete (confirmed). */
export function AllowlistPage() {
  const q = useQuery({ queryKey: entriesKey, queryFn: () => request(AllowlistEntriesQuery) });
  const [adding, setAdding] = useState(false);
  const del = useConfirmedDelete<Entry>({
    remove: (e) => request(DeleteAllowlistEntryMutation, { id: e.id }),
    title: 'Delete allowlist entry?',
    message: (e) => `Delete ${e.value}? Later runs of the feeds store what it covered again.`,
    deleted: (e) => `${e.value} is no longer allowlisted`,
    invalidate: [entriesKey],
  });
  const columns: RecordColumn<Entry>[] = [
    { header: 'Value', td: { className: 'mono break' }, cell: (e) => e.value },
    { header: 'Kind', cell: (e) => kindLabels[e.kind] },
    { header: 'Comment', cell: (e) => e.comment || '—' },
    { header: 'Added', cell: (e) => formatDateTime(e.createdAt) },
    {
      header: 'Actions',
      cell: (e) => (
        <button type="button" className="btn btn-small btn-danger-ghost" onClick={() => del.ask(e)} aria-label={`Delete ${e.value}`}>
          Delete
        </button>
      ),
    },
  ];
  const add = (
    <button type="button" className="btn btn-primary" onClick={() => setAdding(true)}>
      + Add entry
    </button>
  );
  return (
    <Page
      id="allowlist"
      title="Allowlist"
      description="Values that are never stored nor exported (your entries below, the list user), and the warninglists that drop or flag indicators."
      actions={add}
    >
      <QueryView
        query={q}
        loading="Loading the allowlist…"
        isEmpty={(d) => d.allowlistEntries.length === 0}
        empty={
          <EmptyState title="No allowlist entries yet.">
            <p className="muted">The built-in lists apply all the same.</p>
          </EmptyState>
        }
      >
        {(d) => (
          <RecordTable
            label="Allowlist entries"
            columns={columns}
            records={d.allowlistEntries.map((e) => ({ ...e, name: e.value }))}
            row={(e) => ({ 'data-entry-value': e.value })}
          />
        )}
      </QueryView>
      {adding && <AddEntryForm onClose={() => setAdding(false)} />}
      {del.dialog}
      <Warninglists />
    </Page>
  );
}

function AddEntryForm(props: { onClose: () => void }) {
  const [value, setValue] = useState('');
  const [comment, setComment] = useState('');
  const qc = useQueryClient();
  const toast = useToast();
  const save = useMutation({
    mutationFn: () => request(AddAllowlistEntryMutation, { input: { value, comment } }).then((r) => r.addAllowlistEntry),
    onSuccess: (r) => {
      const removed = r.removedIocs === 1 ? '1 stored indicator removed' : `${r.removedIocs} stored indicators removed`;
      toast.success(`${r.entry.value} allowlisted; ${removed}`);
      void qc.invalidateQueries({ queryKey: entriesKey });
      props.onClose();
    },
  });
  const errs = fieldErrors(save.error);
  const top = formError(save.error, ['value', 'comment']);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <FormModal title="Add allowlist entry" onClose={props.onClose} form="allowlist-form" submitLabel="Add entry" busy={save.isPending}>
      <form id="allowlist-form" className="form-grid" onSubmit={submit} noValidate>
        {top && (
          <div className="error-box span-2" role="alert">
            {top}
          </div>
        )}
        <Field
          label="Value"
          error={errs.value}
          hint="An IP address, a CIDR range, a domain (covers its subdomains) or a URL prefix with its scheme. Stored indicators it covers are removed."
        >
          {(id, d) => (
            <input id={id} aria-describedby={d} aria-invalid={!!errs.value} required value={value} onChange={(e) => setValue(e.target.value)} />
          )}
        </Field>
        <Field label="Comment" error={errs.comment} hint="Why it is benign (at most 500 characters).">
          {(id, d) => <input id={id} aria-describedby={d} aria-invalid={!!errs.comment} maxLength={500} value={comment} onChange={(e) => setComment(e.target.value)} />}
        </Field>
      </form>
    </FormModal>
  );
}

type List = ListsData['warninglists'][number] & { id: string };
const listsKey = ['warninglists'];
const actionLabels: Record<WarninglistAction, string> = { DROP: 'Drop', FLAG: 'Flag', OFF: 'Off' };
// A list that drops has what it matches removed after the mutation answers
// (list.removing until done), so the toast cannot give a count.
const removingNote = '; the stored indicators it matches are being removed in the background';

/** Warninglists is the table of every warninglist, with its action, and the import, subscribe and delete of one's own. */
function Warninglists() {
  // While a list turned to drop has its stored indicators removed in the
  // background, the table is read again until it is done.
  const q = useQuery({
    queryKey: listsKey,
    queryFn: () => request(WarninglistsQuery),
    refetchInterval: (query) => (query.state.data?.warninglists.some((l) => l.removing) ? 3000 : false),
  });
  const qc = useQueryClient();
  const toast = useToast();
  const [adding, setAdding] = useState<'import' | 'subscribe' | null>(null);
  const setAction = useMutation({
    mutationFn: (v: { name: string; action: WarninglistAction }) => request(SetWarninglistActionMutation, v).then((r) => r.setWarninglistAction),
    onSuccess: (r) => {
      const removed = r.list.removing ? removingNote : '';
      toast.success(`${r.list.name} now ${actionLabels[r.list.action].toLowerCase()}s${removed}`);
      void qc.invalidateQueries({ queryKey: listsKey });
      void qc.invalidateQueries({ queryKey: ['iocs'] });
    },
    onError: (e) => toast.error(formError(e, []) ?? 'Unable to change the action'),
  });
  const del = useConfirmedDelete<List>({
    remove: (l) => request(DeleteWarninglistMutation, { name: l.name }),
    title: 'Delete warninglist?',
    message: (l) => `Delete ${l.name}? What it dropped is stored again by later runs; what it flagged is no longer flagged.`,
    deleted: (l) => `${l.name} deleted`,
    invalidate: [listsKey],
  });
  const columns: RecordColumn<List>[] = [
    {
      header: 'List',
      cell: (l) => (
        <>
          <span className="mono">{l.name}</span>
          <div className="muted small">{l.description || (l.url ?? '')}</div>
        </>
      ),
    },
    { header: 'Type', cell: (l) => l.type },
    { header: 'Entries', cell: (l) => l.entryCount.toLocaleString() },
    { header: 'Applies to', cell: (l) => (l.kinds.length ? l.kinds.join(', ') : <span className="muted" title={l.note ?? undefined}>nothing</span>) },
    { header: 'Source', cell: (l) => (l.builtin ? `Built-in (v${l.version})` : l.url ? 'Subscribed' : 'Imported') },
    {
      header: 'Action',
      cell: (l) => (
        <>
          <select
            aria-label={`Action of ${l.name}`}
            value={l.action}
            disabled={setAction.isPending}
            onChange={(e) => setAction.mutate({ name: l.name, action: e.target.value as WarninglistAction })}
          >
            {(['DROP', 'FLAG', 'OFF'] as const).map((a) => (
              <option key={a} value={a}>
                {actionLabels[a]}
                {a === l.defaultAction ? ' (default)' : ''}
              </option>
            ))}
          </select>
          {l.removing && (
            <span className="muted small" role="status">
              {' '}
              removing…
            </span>
          )}
        </>
      ),
    },
    {
      header: 'Actions',
      cell: (l) =>
        l.builtin ? null : (
          <button type="button" className="btn btn-small btn-danger-ghost" onClick={() => del.ask(l)} aria-label={`Delete ${l.name}`}>
            Delete
          </button>
        ),
    },
  ];
  return (
    <section aria-labelledby="warninglists-heading">
      <div className="warninglists-head">
        <h2 id="warninglists-heading" className="section-title">
          Warninglists
        </h2>
        <div className="warninglists-actions">
          <button type="button" className="btn" onClick={() => setAdding('import')}>
            Import list
          </button>
          <button type="button" className="btn" onClick={() => setAdding('subscribe')}>
            Subscribe to list
          </button>
        </div>
      </div>
      <p className="muted">
        MISP&apos;s warninglists and your own. Drop: not stored. Flag: stored with a warning (exports take warnings=exclude). Off: not applied.
      </p>
      <QueryView query={q} loading="Loading the warninglists…" isEmpty={(d) => d.warninglists.length === 0} empty={<EmptyState title="No warninglists." />}>
        {(d) => (
          <RecordTable label="Warninglists" columns={columns} records={d.warninglists.map((l) => ({ ...l, id: l.name }))} row={(l) => ({ 'data-list-name': l.name })} />
        )}
      </QueryView>
      {adding && <AddListForm mode={adding} onClose={() => setAdding(null)} />}
      {del.dialog}
    </section>
  );
}

function AddListForm(props: { mode: 'import' | 'subscribe'; onClose: () => void }) {
  const [name, setName] = useState('');
  const [content, setContent] = useState('');
  const [url, setUrl] = useState('');
  const [action, setAction] = useState<WarninglistAction>('FLAG');
  const qc = useQueryClient();
  const toast = useToast();
  const importing = props.mode === 'import';
  const save = useMutation({
    mutationFn: () =>
      importing
        ? request(ImportWarninglistMutation, { input: { name, content, action } }).then((r) => r.importWarninglist)
        : request(SubscribeWarninglistMutation, { input: { name, url, action } }).then((r) => r.subscribeWarninglist),
    onSuccess: (r) => {
      const removed = r.list.removing ? removingNote : '';
      toast.success(`${r.list.name}: ${r.list.entryCount} entries${removed}`);
      void qc.invalidateQueries({ queryKey: listsKey });
      void qc.invalidateQueries({ queryKey: ['iocs'] });
      props.onClose();
    },
  });
  const errs = fieldErrors(save.error);
  const top = formError(save.error, ['name', 'content', 'url', 'action']);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const title = importing ? 'Import warninglist' : 'Subscribe to warninglist';
  return (
    <FormModal title={title} onClose={props.onClose} form="warninglist-form" submitLabel={importing ? 'Import' : 'Subscribe'} busy={save.isPending}>
      <form id="warninglist-form" className="form-grid" onSubmit={submit} noValidate>
        {top && (
          <div className="error-box span-2" role="alert">
            {top}
          </div>
        )}
        <Field label="Name" error={errs.name} hint="Letters, digits, '-', '_' and '.'; at most 64.">
          {(id, d) => <input id={id} aria-describedby={d} aria-invalid={!!errs.name} required value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <Field label="Action" error={errs.action}>
          {(id, d) => (
            <select id={id} aria-describedby={d} value={action} onChange={(e) => setAction(e.target.value as WarninglistAction)}>
              <option value="DROP">Drop</option>
              <option value="FLAG">Flag</option>
              <option value="OFF">Off</option>
            </select>
          )}
        </Field>
        {importing ? (
          <Field
            label="Content"
            error={errs.content}
            hint="A MISP warninglist (JSON), or one entry a line: an IP address or range, a host name (.example.org: the names below it only), a URL or a hash."
          >
            {(id, d) => (
              <textarea id={id} aria-describedby={d} aria-invalid={!!errs.content} rows={8} className="mono" value={content} onChange={(e) => setContent(e.target.value)} />
            )}
          </Field>
        ) : (
          <Field label="URL" error={errs.url} hint="Fetched now and daily after, with its ETag, through the egress policy of feeds.">
            {(id, d) => <input id={id} aria-describedby={d} aria-invalid={!!errs.url} required value={url} onChange={(e) => setUrl(e.target.value)} />}
          </Field>
        )}
      </form>
    </FormModal>
  );
}
