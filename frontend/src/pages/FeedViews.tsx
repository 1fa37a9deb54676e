import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { DeleteViewMutation, SaveViewMutation, ViewsQuery } from '../api';
import { useConfirmedDelete } from '../components/crud';
import { Field, FormModal } from '../components/ui';
import { useToast } from '../components/toast';
import { errorMessage, fieldErrors, formError } from '../lib/errors';
import type { FeedTableState } from '../lib/feedFilters';
import { request } from '../lib/graphql';
import { viewInput, viewState, type SavedFeedView } from '../lib/views';

/** useFeedViews loads the caller's saved views of the feeds table. */
export function useFeedViews() {
  return useQuery({ queryKey: ['views', 'FEEDS'], queryFn: () => request(ViewsQuery, { table: 'FEEDS' }), staleTime: 60_000 });
}

/**
 * ViewMenu is the spec's "Select View": pick a saved layout (columns,
 * filters, search, order), save the current one under a name, set the
 * default, delete.
 */
export function ViewMenu(props: {
  state: FeedTableState;
  visibility: Record<string, boolean>;
  current: string;
  onApply: (view: SavedFeedView, applied: ReturnType<typeof viewState>) => void;
  onReset: () => void;
}) {
  const views = useFeedViews();
  const [saving, setSaving] = useState(false);
  const qc = useQueryClient();
  const del = useConfirmedDelete({
    remove: (v: SavedFeedView) => request(DeleteViewMutation, { id: v.id }),
    title: 'Delete view?',
    message: (v) => `Delete the saved view ${v.name}? The feeds are not affected.`,
    deleted: (v) => `View ${v.name} deleted`,
    onDeleted: (v) => {
      if (props.current === v.id) props.onReset();
    },
    invalidate: [['views']],
  });
  const list = views.data?.views ?? [];
  const currentView = list.find((v) => v.id === props.current);

  return (
    <div className="view-menu">
      <label className="inline-label">
        View
        <select
          aria-label="Select view"
          value={props.current}
          disabled={views.isPending || !!views.error}
          title={views.error ? `Saved views are unavailable: ${errorMessage(views.error)}` : undefined}
          onChange={(e) => {
            const v = list.find((x) => x.id === e.target.value);
            if (v) props.onApply(v, viewState(v));
            else props.onReset();
          }}
        >
          <option value="">All columns, no filters</option>
          {list.map((v) => (
            <option key={v.id} value={v.id}>
              {v.name}
              {v.isDefault ? ' (default)' : ''}
            </option>
          ))}
        </select>
      </label>
      <button type="button" className="btn" onClick={() => setSaving(true)} disabled={!!views.error}>
        Save view…
      </button>
      {currentView && (
        <button type="button" className="btn btn-danger-ghost" onClick={() => del.ask(currentView)} aria-label={`Delete view ${currentView.name}`}>
          Delete view
        </button>
      )}
      {saving && (
        <SaveViewDialog
          initialName={currentView?.name ?? ''}
          initialDefault={currentView?.isDefault ?? false}
          state={props.state}
          visibility={props.visibility}
          onClose={() => setSaving(false)}
          onSaved={(id) => {
            void qc.invalidateQueries({ queryKey: ['views'] }).then(() => {
              const v = qc.getQueryData<{ views: SavedFeedView[] }>(['views', 'FEEDS'])?.views.find((x) => x.id === id);
              if (v) props.onApply(v, viewState(v));
            });
          }}
        />
      )}
      {del.dialog}
    </div>
  );
}

function SaveViewDialog(props: {
  initialName: string;
  initialDefault: boolean;
  state: FeedTableState;
  visibility: Record<string, boolean>;
  onClose: () => void;
  onSaved: (id: string) => void;
}) {
  const [name, setName] = useState(props.initialName);
  const [isDefault, setIsDefault] = useState(props.initialDefault);
  const toast = useToast();
  const save = useMutation({
    mutationFn: () => request(SaveViewMutation, { input: viewInput(name, props.state, props.visibility, isDefault) }),
    onSuccess: (d) => {
      toast.success(`View ${d.saveView.name} saved`);
      props.onSaved(d.saveView.id);
      props.onClose();
    },
  });
  const errs = fieldErrors(save.error);
  const top = formError(save.error, ['name']);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <FormModal title="Save view" onClose={props.onClose} form="view-form" submitLabel="Save view" busy={save.isPending}>
      <form id="view-form" className="form-grid" onSubmit={submit} noValidate>
        {top && <div className="error-box span-2" role="alert">{top}</div>}
        <div className="span-2">
          <Field label="View name" error={errs.name} hint="Saving under an existing name replaces that view.">
            {(id, d) => <input id={id} aria-describedby={d} required value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
        </div>
        <label className="check span-2">
          <input type="checkbox" checked={isDefault} onChange={(e) => setIsDefault(e.target.checked)} />
          Open the feeds table with this view by default
        </label>
        <p className="muted small span-2">The view keeps the visible columns, filters, search and sort order.</p>
      </form>
    </FormModal>
  );
}
