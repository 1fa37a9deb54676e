import { needsLine } from '../lib/builtinFeeds';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import {
  createColumnHelper,
  getCoreRowModel,
  useReactTable,
  type SortingState,
  type VisibilityState,
} from '@tanstack/react-table';
import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import { Link, useSearchParams } from 'react-router';
import { FeedFacetsQuery, FeedStatusChangedSubscription, FeedsQuery } from '../api';
import { DataTable } from '../components/dataTable';
import { TimeCell } from '../components/time';
import { CursorPager, EmptyState, Page, QueryView, Spinner, useDebounced } from '../components/ui';
import type { FeedFacetsQuery as FeedFacetsResult, FeedOrderField, FeedRowFragment, FeedsQuery as FeedsResult } from '../gql/graphql';
import { errorMessage } from '../lib/errors';
import {
  activeFilterCount,
  clearAllFilters,
  clearFilter,
  facetColumnKey,
  facetValueLabel,
  feedFilterKeys,
  feedFilterLabels,
  feedQueryVariables,
  feedStateFromParams,
  feedStatuses,
  feedStateToParams,
  isOrderField,
  toggleFilterValue,
  type FeedFilterKey,
  type FeedTableState,
} from '../lib/feedFilters';
import { days, feedTypeLabel, formatDateTime, fromDateTimeLocal, hours, toDateTimeLocal } from '../lib/format';
import { feedExportURL } from '../lib/exportCsv';
import { useCursorPages } from '../lib/cursorPages';
import { feedColumnLabels } from '../lib/feedColumns';
import { request } from '../lib/graphql';
import { liveConnection, subscribe } from '../lib/live';
import { viewState } from '../lib/views';
import { EnabledSwitch, FeedIcon, useFeedConfirmations, useFeedMutations } from './feedActions';
import { FeedForm } from './FeedForm';
import { PremiumFeedCreateForm, useCreatablePremiumKinds, usePremiumKinds } from './PremiumFeedForm';
import { useFeedViews, ViewMenu } from './FeedViews';
import { DailyCapNotice, FeedRunStatus, isRunning, useRunProgress } from './feedRunStatus';

const col = createColumnHelper<FeedRowFragment>();

/** columnLabels names every column; the chooser uses it. */
const columnLabels: Record<string, string> = feedColumnLabels;

/** sortField maps a column to the API's order field. */
const sortField: Record<string, FeedOrderField> = {
  name: 'NAME',
  type: 'TYPE',
  status: 'STATUS',
  statusMessage: 'STATUS_MESSAGE',
  enabled: 'ENABLED',
  pollingFrequency: 'POLLING_FREQUENCY',
  retentionPeriod: 'RETENTION_PERIOD',
  backfillDays: 'BACKFILL_DAYS',
  description: 'DESCRIPTION',
  lastIngestion: 'LAST_INGESTION',
};
const columnOfField = Object.fromEntries(Object.entries(sortField).map(([c, f]) => [f, c]));

const VISIBILITY_KEY = 'tifeeds.feeds.columns';

function loadVisibility(): VisibilityState {
  try {
    return JSON.parse(localStorage.getItem(VISIBILITY_KEY) ?? '{}') as VisibilityState;
  } catch {
    return {};
  }
}

/** FeedsPage is the spec's feeds table: search, filters with counts, columns, sorting, paging. */
export function FeedsPage() {
  const [params, setParams] = useSearchParams();
  const state = useMemo(() => feedStateFromParams(params), [params]);
  const setState = (next: FeedTableState) => setParams(feedStateToParams(next));
  const [searchText, setSearchText] = useState(state.search);
  const debouncedSearch = useDebounced(searchText, 300);
  const [visibility, setVisibility] = useState<VisibilityState>(loadVisibility);
  const [showFilters, setShowFilters] = useState(false);
  const [editing, setEditing] = useState<FeedRowFragment | 'new' | 'newPremium' | null>(null);
  const m = useFeedMutations();
  const confirm = useFeedConfirmations(m);
  const qc = useQueryClient();
  const premiumKinds = usePremiumKinds();
  const noBackfill = (f: FeedRowFragment) =>
    f.category === 'TSV' || (f.type === 'PREMIUM' && premiumKinds.data?.premiumFeedKinds.find((k) => k.kind === f.premiumKind)?.backfillDays === null);
  const [viewId, setViewId] = useState('');
  const views = useFeedViews();

  // The default view applies when the table opens with nothing in its address.
  const [defaultApplied, setDefaultApplied] = useState(params.toString() !== '');
  useEffect(() => {
    if (defaultApplied || !views.data) return;
    setDefaultApplied(true);
    const def = views.data.views.find((v) => v.isDefault);
    if (def) {
      const { state: s, visibility: vis } = viewState(def);
      setViewId(def.id);
      setVisibility(vis);
      setParams(feedStateToParams(s), { replace: true });
    }
  }, [views.data, defaultApplied]);

  // Search is typed into a local box and written to the URL once typing pauses.
  useEffect(() => {
    if (debouncedSearch !== state.search) setParams(feedStateToParams({ ...state, search: debouncedSearch }), { replace: true });
  }, [debouncedSearch]);
  useEffect(() => setSearchText(state.search), [state.search]);
  // Any change of what is shown starts again from the first page.
  const pages = useCursorPages(params.toString(), 25);
  useEffect(() => localStorage.setItem(VISIBILITY_KEY, JSON.stringify(visibility)), [visibility]);

  const live = useSyncExternalStore(liveConnection.subscribe, liveConnection.get);
  // A run's last event: the row's run record and counts have moved.
  const progress = useRunProgress(() => void qc.invalidateQueries({ queryKey: ['feeds'] }));
  const vars = feedQueryVariables(state, pages.first, pages.after);
  const feeds = useQuery({
    queryKey: ['feeds', vars],
    queryFn: () => request(FeedsQuery, vars),
    placeholderData: keepPreviousData,
    // Status changes arrive over the websocket; poll only while it is down,
    // or while a row shows a run in flight: an event sent between this
    // query's answer and the subscription's start is never seen, and the
    // row would show Running until the next minute's poll.
    refetchInterval: (q) => (live && !q.state.data?.feeds.nodes.some((f) => isRunning(f, undefined)) ? 60_000 : 5000),
  });
  const facetVars = { search: vars.search, filter: vars.filter };
  const facets = useQuery({
    queryKey: ['feedFacets', facetVars],
    queryFn: () => request(FeedFacetsQuery, facetVars),
    placeholderData: keepPreviousData,
    enabled: showFilters,
  });

  // Live status: patch the rows in every cached page as events arrive.
  useEffect(
    () =>
      subscribe(FeedStatusChangedSubscription, {}, (d) => {
        const f = d.feedStatusChanged;
        qc.setQueriesData<FeedsResult>({ queryKey: ['feeds'] }, (old) =>
          old ? { feeds: { ...old.feeds, nodes: old.feeds.nodes.map((n) => (n.id === f.id ? { ...n, ...f } : n)) } } : old,
        );
        // Status Message and Enabled counts may have moved.
        void qc.invalidateQueries({ queryKey: ['feedFacets'] });
      }),
    [qc],
  );

  // Rebuilt on each render: the cells close over the mutations' pending state.
  const columns = [
      col.display({ id: 'icon', header: 'Icon', cell: (c) => <FeedIcon feed={c.row.original} /> }),
      col.accessor('name', {
        header: 'Name',
        cell: (c) => (
          <Link to={`/feeds/${c.row.original.id}`} className="strong-link">
            {c.getValue()}
          </Link>
        ),
      }),
      col.accessor('type', { header: 'Type', cell: (c) => feedTypeLabel(c.getValue()) }),
      col.accessor('status', { header: 'Status', cell: (c) => <FeedRunStatus feed={c.row.original} progress={progress.get(c.row.original.id)} /> }),
      col.accessor('statusMessage', {
        header: 'Status Message',
        cell: (c) => (
          <>
            <span data-testid="status-message">{c.getValue()}</span>
            <DailyCapNotice feed={c.row.original} />
          </>
        ),
      }),
      col.accessor('enabled', {
        header: 'Enabled',
        cell: (c) => <EnabledSwitch feed={c.row.original} m={m} ask={confirm.ask} />,
      }),
      col.accessor('pollingFrequency', { header: 'Polling Frequency', cell: (c) => hours(c.getValue()) }),
      col.accessor('retentionPeriod', { header: 'Retention Period', cell: (c) => days(c.getValue()) }),
      col.accessor('backfillDays', {
        header: 'Backfill Days',
        // Backfill is a TAXII notion: a TSV file has no past to fetch, nor have some premium kinds.
        cell: (c) => (noBackfill(c.row.original) ? <span className="muted" title="Not used by this feed">—</span> : days(c.getValue())),
      }),
      col.accessor('description', {
        header: 'Description',
        cell: (c) => {
          const needs = needsLine(c.row.original);
          return (
            <>
              <span className="clamp" title={c.getValue()}>
                {c.getValue()}
              </span>
              {needs?.missing && (
                <span className="badge badge-warn" data-testid="missing-key" title={needs.text}>
                  {needs.text}
                </span>
              )}
            </>
          );
        },
      }),
      col.accessor('lastIngestion', {
        header: 'Last Ingestion',
        cell: (c) => <TimeCell iso={c.getValue()} empty="Never" />,
      }),
      col.accessor('iocCount', { header: 'IoCs', cell: (c) => c.getValue().toLocaleString('en-US') }),
      col.accessor('nextRun', {
        header: 'Next Run',
        cell: (c) => <TimeCell iso={c.getValue()} empty={c.row.original.enabled ? '—' : 'Disabled'} />,
      }),
      col.display({
        id: 'actions',
        header: 'Actions',
        cell: (c) => {
          const f = c.row.original;
          return (
            <div className="row-actions">
              <button type="button" className="btn btn-small" onClick={() => m.runNow.mutate(f.id)} disabled={!f.enabled} title={f.enabled ? undefined : 'Enable the feed to run it'}>
                Run now
              </button>
              {f.canEdit && (
                <button type="button" className="btn btn-small" onClick={() => setEditing(f)} aria-label={`Edit ${f.name}`}>
                  Edit
                </button>
              )}
              {f.canReset && (
                <button type="button" className="btn btn-small" onClick={() => confirm.ask({ kind: 'reset', feed: f })} aria-label={`Reset premium feed ${f.name}`}>
                  Reset
                </button>
              )}
              {f.canDelete && (
                <button type="button" className="btn btn-small btn-danger-ghost" onClick={() => confirm.ask({ kind: 'delete', feed: f })} aria-label={`Delete ${f.name}`}>
                  Delete
                </button>
              )}
            </div>
          );
        },
      }),
  ];

  const sorting: SortingState = state.sort ? [{ id: columnOfField[state.sort.field], desc: state.sort.direction === 'DESC' }] : [];
  const data = feeds.data?.feeds;
  const table = useReactTable({
    data: data?.nodes ?? [],
    columns,
    getRowId: (r) => r.id,
    getCoreRowModel: getCoreRowModel(),
    manualSorting: true,
    manualPagination: true,
    enableSortingRemoval: true,
    state: { sorting, columnVisibility: visibility },
    onColumnVisibilityChange: setVisibility,
    onSortingChange: (updater) => {
      const next = typeof updater === 'function' ? updater(sorting) : updater;
      const s = next[0];
      const field = s ? sortField[s.id] : undefined;
      setState({ ...state, sort: field && isOrderField(field) ? { field, direction: s.desc ? 'DESC' : 'ASC' } : undefined });
    },
  });

  const nActive = activeFilterCount(state);

  return (
    <Page
      id="feeds"
      title="Feeds"
      description="Threat-intelligence sources, their status and schedule."
      actions={<CreateMenu onCustom={() => setEditing('new')} onPremium={() => setEditing('newPremium')} />}
    >

      <div className="toolbar">
        <input
          type="search"
          className="search"
          placeholder="Search feeds…"
          aria-label="Search feeds"
          value={searchText}
          onChange={(e) => setSearchText(e.target.value)}
        />
        <button
          type="button"
          className={showFilters ? 'btn btn-toggle active' : 'btn btn-toggle'}
          aria-expanded={showFilters}
          aria-controls="feed-filters"
          onClick={() => setShowFilters((s) => !s)}
        >
          Filters{nActive > 0 && <span className="count-badge">{nActive}</span>}
        </button>
        <ColumnChooser table={table} />
        <ExportMenu state={state} table={table} />
        <ViewMenu
          state={state}
          visibility={visibility}
          current={viewId}
          onApply={(v, applied) => {
            setViewId(v.id);
            setVisibility(applied.visibility);
            setState(applied.state);
          }}
          onReset={() => {
            setViewId('');
            setVisibility({});
            setState({ search: '', filter: {} });
          }}
        />
      </div>

      {nActive > 0 && <FilterChips state={state} setState={setState} />}

      <div className={showFilters ? 'with-panel' : ''}>
        {showFilters && (
          <FilterPanel
            state={state}
            setState={setState}
            facets={facets.data?.feeds.facets}
            loading={facets.isPending}
            error={facets.error ? errorMessage(facets.error) : null}
          />
        )}
        <div className="table-area">
          <QueryView
            query={feeds}
            stale
            loading="Loading feeds…"
            isEmpty={(d) => d.feeds.nodes.length === 0}
            empty={
              <EmptyState title={nActive || state.search ? 'No feed matches.' : 'No feeds yet.'}>
                {nActive || state.search ? (
                  <button type="button" className="btn" onClick={() => { setSearchText(''); setState({ search: '', filter: {} }); }}>
                    Clear search and filters
                  </button>
                ) : (
                  <button type="button" className="btn btn-primary" onClick={() => setEditing('new')}>
                    Create a custom feed
                  </button>
                )}
              </EmptyState>
            }
          >
            {(d) => (
              <>
                <DataTable table={table} label="Feeds" busy={feeds.isFetching} sortable={(id) => !!sortField[id]} row={(f) => ({ 'data-feed-name': f.name })} />
                <CursorPager pages={pages} connection={d.feeds} noun="feeds" resizable />
              </>
            )}
          </QueryView>
        </div>
      </div>
      {editing === 'newPremium' ? (
        <PremiumFeedCreateForm onClose={() => setEditing(null)} />
      ) : (
        editing && <FeedForm feed={editing === 'new' ? undefined : editing} onClose={() => setEditing(null)} />
      )}
      {confirm.dialog}
    </Page>
  );
}

/**
 * CreateMenu is the spec's Create: a Custom feed, or a Premium feed of a kind
 * that allows several (offered while such a kind is below its limit).
 */
function CreateMenu(props: { onCustom: () => void; onPremium: () => void }) {
  const ref = useRef<HTMLDetailsElement>(null);
  const creatable = useCreatablePremiumKinds();
  const open = creatable.data?.filter((c) => !c.full) ?? [];
  const full = creatable.data?.filter((c) => c.full) ?? [];
  const pick = (fn: () => void) => () => {
    if (ref.current) ref.current.open = false;
    fn();
  };
  let premiumNote: string | null = null;
  if (creatable.error) premiumNote = 'Premium feed kinds are unavailable.';
  else if (creatable.data && creatable.data.length === 0) premiumNote = 'No premium kind can be created in this build.';
  else if (creatable.data && open.length === 0) premiumNote = full.map((c) => `${c.kind.title}: the limit of ${c.kind.maxFeeds} feeds is reached.`).join(' ');
  return (
    <details className="menu menu-right" ref={ref}>
      <summary className="btn btn-primary">+ Create</summary>
      <div className="menu-pop" role="group" aria-label="Create feed">
        <button type="button" className="btn btn-small" onClick={pick(props.onCustom)}>
          Custom feed
        </button>
        <button type="button" className="btn btn-small" onClick={pick(props.onPremium)} disabled={open.length === 0} aria-describedby={premiumNote ? 'premium-create-note' : undefined}>
          Premium feed
        </button>
        {premiumNote && (
          <small id="premium-create-note" className="hint">
            {premiumNote}
          </small>
        )}
      </div>
    </details>
  );
}

function ExportMenu({ state, table }: { state: FeedTableState; table: ReturnType<typeof useReactTable<FeedRowFragment>> }) {
  const visible = table.getVisibleLeafColumns().map((c) => c.id);
  return (
    <details className="menu">
      <summary className="btn">Export CSV</summary>
      <div className="menu-pop" role="group" aria-label="Export CSV">
        <a className="btn btn-small" href={feedExportURL(state, visible)} download>
          Selected columns
        </a>
        <a className="btn btn-small" href={feedExportURL(state, null)} download>
          All columns
        </a>
        <small className="hint">With the current search and filters.</small>
      </div>
    </details>
  );
}

function ColumnChooser({ table }: { table: ReturnType<typeof useReactTable<FeedRowFragment>> }) {
  return (
    <details className="menu">
      <summary className="btn">Columns</summary>
      <div className="menu-pop" role="group" aria-label="Visible columns">
        {table.getAllLeafColumns().map((c) => (
          <label key={c.id} className="check">
            <input type="checkbox" checked={c.getIsVisible()} disabled={c.id === 'name'} onChange={c.getToggleVisibilityHandler()} />
            {columnLabels[c.id]}
          </label>
        ))}
        <button type="button" className="btn btn-small" onClick={() => table.resetColumnVisibility()}>
          Show all
        </button>
      </div>
    </details>
  );
}

function FilterChips({ state, setState }: { state: FeedTableState; setState: (s: FeedTableState) => void }) {
  return (
    <ul className="chips" aria-label="Active filters">
      {feedFilterKeys.flatMap((k) =>
        (state.filter[k] ?? []).map((v) => (
          <li key={`${k}=${v}`} className="chip">
            <span>
              {feedFilterLabels[k]}: <strong>{facetValueLabel(k, v)}</strong>
            </span>
            <button type="button" aria-label={`Remove filter ${feedFilterLabels[k]} ${facetValueLabel(k, v)}`} onClick={() => setState(toggleFilterValue(state, k, v))}>
              ×
            </button>
          </li>
        )),
      )}
      {(state.lastIngestionFrom || state.lastIngestionTo) && (
        <li className="chip">
          <span>
            Last Ingestion: <strong>{state.lastIngestionFrom ? formatDateTime(state.lastIngestionFrom) : '…'} – {state.lastIngestionTo ? formatDateTime(state.lastIngestionTo) : '…'}</strong>
          </span>
          <button type="button" aria-label="Remove filter Last Ingestion" onClick={() => setState(clearFilter(state, 'lastIngestion'))}>
            ×
          </button>
        </li>
      )}
      <li>
        <button type="button" className="btn btn-small btn-link" onClick={() => setState(clearAllFilters(state))}>
          Clear all filters
        </button>
      </li>
    </ul>
  );
}

type Facets = FeedFacetsResult['feeds']['facets'];

/**
 * FilterPanel lists, per filterable column, the values the server's facets
 * report with their counts; values already selected stay listed even when
 * their count drops to zero, so they can be unticked.
 */
function FilterPanel(props: {
  state: FeedTableState;
  setState: (s: FeedTableState) => void;
  facets: Facets | undefined;
  loading: boolean;
  error: string | null;
}) {
  const { state, setState } = props;
  const byKey = new Map<FeedFilterKey, { value: string; count: number }[]>();
  for (const f of props.facets ?? []) {
    const key = facetColumnKey[f.column];
    if (key) byKey.set(key, f.values);
  }
  return (
    <aside id="feed-filters" className="filter-panel" aria-label="Filters">
      <div className="panel-head">
        <h2>Filters</h2>
        <button type="button" className="btn btn-small btn-link" onClick={() => setState(clearAllFilters(state))} disabled={activeFilterCount(state) === 0}>
          Clear all
        </button>
      </div>
      {props.error && <p className="field-error">Value counts are unavailable: {props.error}</p>}
      {props.loading && <Spinner label="Counting…" />}
      {feedFilterKeys.map((key) => {
        const selected = state.filter[key] ?? [];
        // The derived status has no facet: its three values are offered as they are.
        const values: { value: string; count: number | null }[] = key === 'status' ? feedStatuses.map((value) => ({ value, count: null })) : [...(byKey.get(key) ?? [])];
        for (const s of selected) if (!values.some((v) => v.value === s)) values.push({ value: s, count: 0 });
        if (values.length === 0) return null;
        return (
          <fieldset key={key} className="facet">
            <legend>
              {feedFilterLabels[key]}
              {selected.length > 0 && (
                <button type="button" className="btn-link small" onClick={() => setState(clearFilter(state, key))} aria-label={`Clear ${feedFilterLabels[key]} filter`}>
                  clear
                </button>
              )}
            </legend>
            <div className="facet-values">
              {values.map((v) => (
                <label key={v.value} className="check facet-value">
                  <input type="checkbox" checked={selected.includes(v.value)} onChange={() => setState(toggleFilterValue(state, key, v.value))} />
                  <span className="facet-label">{facetValueLabel(key, v.value)}</span>
                  {v.count !== null && <span className="facet-count">{v.count}</span>}
                </label>
              ))}
            </div>
          </fieldset>
        );
      })}
      <fieldset className="facet">
        <legend>
          Last Ingestion
          {(state.lastIngestionFrom || state.lastIngestionTo) && (
            <button type="button" className="btn-link small" onClick={() => setState(clearFilter(state, 'lastIngestion'))} aria-label="Clear Last Ingestion filter">
              clear
            </button>
          )}
        </legend>
        <label className="stack-label">
          From
          <input type="datetime-local" value={toDateTimeLocal(state.lastIngestionFrom)} onChange={(e) => setState({ ...state, lastIngestionFrom: fromDateTimeLocal(e.target.value) })} />
        </label>
        <label className="stack-label">
          To
          <input type="datetime-local" value={toDateTimeLocal(state.lastIngestionTo)} onChange={(e) => setState({ ...state, lastIngestionTo: fromDateTimeLocal(e.target.value) })} />
        </label>
      </fieldset>
    </aside>
  );
}
