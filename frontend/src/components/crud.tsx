import { useMutation, useQueryClient, type QueryKey } from '@tanstack/react-query';
import { useState, type ReactNode, type TdHTMLAttributes } from 'react';
import { errorMessage } from '../lib/errors';
import { useToast } from './toast';
import { ConfirmDialog, EmptyState, Page, QueryView, type QueryLike } from './ui';

/** ConfirmedDelete says how useConfirmedDelete deletes a record and what it tells. */
export interface ConfirmedDelete<T> {
  remove: (record: T) => Promise<unknown>;
  title: string;
  message: (record: T) => string;
  /** deleted is the success toast. */
  deleted: (record: T) => string;
  onDeleted?: (record: T) => void;
  invalidate: QueryKey[];
}

/**
 * useConfirmedDelete asks before deleting a record: ask(record) opens the
 * dialog, Delete runs remove, toasts the outcome and refreshes the queries
 * under invalidate whether it worked or not (another client may have deleted it).
 */
export function useConfirmedDelete<T extends { name: string }>(opts: ConfirmedDelete<T>): { ask: (record: T) => void; dialog: ReactNode } {
  const [deleting, setDeleting] = useState<T | null>(null);
  const qc = useQueryClient();
  const toast = useToast();
  const del = useMutation({
    mutationFn: opts.remove,
    onSuccess: (_d, r) => {
      toast.success(opts.deleted(r));
      opts.onDeleted?.(r);
    },
    onError: (err) => toast.error(errorMessage(err)),
    onSettled: () => {
      setDeleting(null);
      for (const queryKey of opts.invalidate) void qc.invalidateQueries({ queryKey });
    },
  });
  const dialog = deleting && (
    <ConfirmDialog
      title={opts.title}
      message={opts.message(deleting)}
      confirmLabel="Delete"
      danger
      busy={del.isPending}
      onCancel={() => setDeleting(null)}
      onConfirm={() => del.mutate(deleting)}
    />
  );
  return { ask: setDeleting, dialog };
}

/** RecordColumn is one column of a RecordTable. */
export interface RecordColumn<T> {
  header: string;
  /** num right-aligns a number, header and cells. */
  num?: boolean;
  /** td is more attributes of each cell (a class, a test id). */
  td?: TdHTMLAttributes<HTMLTableCellElement> & { [data: `data-${string}`]: string };
  cell: (record: T) => ReactNode;
}

/** columnClass names a column's cells after its header ("col-actions"), as DataTable does after its id. */
function columnClass(c: { header: string; num?: boolean }): string {
  return `col-${c.header.toLowerCase().replace(/[^a-z0-9]+/g, '-')}${c.num ? ' num' : ''}`;
}

/**
 * RecordTable is a plain table of records. Each cell carries its column's
 * header as data-label, which the narrow-screen layout shows beside the value.
 */
export function RecordTable<T extends { id: string }>(props: {
  label: string;
  columns: RecordColumn<T>[];
  records: T[];
  /** row is attributes of a record's row, e.g. a data-* name for tests. */
  row?: (record: T) => { [data: `data-${string}`]: string };
}) {
  return (
    <div className="table-wrap">
      <table className="data-table" aria-label={props.label}>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th key={c.header} className={columnClass(c)}>
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.records.map((r) => (
            <tr key={r.id} {...props.row?.(r)}>
              {props.columns.map((c) => (
                <td key={c.header} data-label={c.header} {...c.td} className={[columnClass(c), c.td?.className].filter(Boolean).join(' ')}>
                  {c.cell(r)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * RecordsPage is a page listing records (tenants, groups) with New, and
 * per row Edit and Delete: form(record) edits one, form(undefined) creates
 * one, and Delete asks first. The page gives its columns but Actions.
 * Without canEdit (a scope the API refuses writes) it is a plain list: no
 * New, no Actions column.
 */
export function RecordsPage<T extends { id: string; name: string }, D>(props: {
  id: string;
  title: string;
  description: string;
  newLabel: string;
  query: QueryLike<D>;
  records: (data: D) => T[];
  loading: string;
  empty: { title: string; note?: string; createLabel: string };
  /** table is the table's accessible name, its columns and each row's data-* attributes. */
  table: { label: string; columns: RecordColumn<T>[]; row: (record: T) => { [data: `data-${string}`]: string } };
  remove: ConfirmedDelete<T>;
  form: (record: T | undefined, onClose: () => void) => ReactNode;
  canEdit: boolean;
}) {
  const [editing, setEditing] = useState<T | 'new' | null>(null);
  const del = useConfirmedDelete(props.remove);
  const columns: RecordColumn<T>[] = props.canEdit
    ? [
        ...props.table.columns,
        { header: 'Actions', cell: (r) => <EditDeleteActions name={r.name} onEdit={() => setEditing(r)} onDelete={() => del.ask(r)} /> },
      ]
    : props.table.columns;
  const create = () => setEditing('new');
  return (
    <Page
      id={props.id}
      title={props.title}
      description={props.description}
      actions={
        props.canEdit && (
          <button type="button" className="btn btn-primary" onClick={create}>
            {props.newLabel}
          </button>
        )
      }
    >
      <QueryView
        query={props.query}
        loading={props.loading}
        isEmpty={(d) => props.records(d).length === 0}
        empty={
          <EmptyState title={props.empty.title}>
            {props.empty.note && <p className="muted">{props.empty.note}</p>}
            {props.canEdit && (
              <button type="button" className="btn btn-primary" onClick={create}>
                {props.empty.createLabel}
              </button>
            )}
          </EmptyState>
        }
      >
        {(d) => <RecordTable label={props.table.label} columns={columns} records={props.records(d)} row={props.table.row} />}
      </QueryView>
      {props.canEdit && editing && props.form(editing === 'new' ? undefined : editing, () => setEditing(null))}
      {del.dialog}
    </Page>
  );
}

/** EditDeleteActions is a record's Edit and Delete buttons, named after the record for screen readers. */
function EditDeleteActions(props: { name: string; onEdit: () => void; onDelete: () => void }) {
  return (
    <div className="row-actions">
      <button type="button" className="btn btn-small" onClick={props.onEdit} aria-label={`Edit ${props.name}`}>
        Edit
      </button>
      <button type="button" className="btn btn-small btn-danger-ghost" onClick={props.onDelete} aria-label={`Delete ${props.name}`}>
        Delete
      </button>
    </div>
  );
}
