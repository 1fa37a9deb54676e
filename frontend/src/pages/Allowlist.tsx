import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { AddAllowlistEntryMutation, AllowlistEntriesQuery, DeleteAllowlistEntryMutation } from '../api';
import { RecordTable, useConfirmedDelete, type RecordColumn } from '../components/crud';
import { EmptyState, Field, FormModal, Page, QueryView } from '../components/ui';
import { useToast } from '../components/toast';
import type { AllowlistEntriesQuery as EntriesData } from '../gql/graphql';
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
      description="Values that are never stored nor exported, besides the built-in lists of reserved ranges, public DNS resolvers and top sites."
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
