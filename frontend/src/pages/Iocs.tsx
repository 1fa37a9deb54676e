import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { createColumnHelper, getCoreRowModel, useReactTable, type SortingState } from '@tanstack/react-table';
import { useEffect, useId, useMemo, useState, type ReactNode } from 'react';
import { Link, useSearchParams } from 'react-router';
import { FeedOptionsQuery, IocQuery, IocsQuery } from '../api';
import { DataTable } from '../components/dataTable';
import { CursorPager, Drawer, EmptyState, ErrorBox, Page, QueryView, Spinner, useDebounced } from '../components/ui';
import { IocLookup } from './IocLookup';
import { useAuth } from '../auth';
import { useToast } from '../components/toast';
import type { IocOrderField, IocsQuery as IocsResult, IocType } from '../gql/graphql';
import { copyText } from '../lib/clipboard';
import { defang } from '../lib/defang';
import { isRoot } from '../lib/roles';
import { errorMessage } from '../lib/errors';
import { formatDateTime, formatRelative, fromDateTimeLocal, toDateTimeLocal } from '../lib/format';
import { RelativeTime } from '../components/time';
import { iocExportURL } from '../lib/exportCsv';
import { useCursorPages } from '../lib/cursorPages';
import { request } from '../lib/graphql';
import {
  emptyIocTableState,
  iocFilterInput,
  iocFilterProblems,
  iocOrderInput,
  iocStateFromParams,
  iocStateToParams,
  iocTypeLabels,
  iocTypes,
  scoreLevel,
  type IocTableState,
} from '../lib/iocFilters';

type IocRow = IocsResult['iocs']['nodes'][number];
const col = createColumnHelper<IocRow>();
const PAGE_SIZE = 50;

/** sortField maps a sortable column to the API's order field. */
const sortField: Partial<Record<string, IocOrderField>> = {
  type: 'TYPE',
  value: 'VALUE',
  score: 'SCORE',
  firstSeen: 'FIRST_SEEN',
  lastSeen: 'LAST_SEEN',
  expirationDate: 'EXPIRATION_DATE',
};
const columnOfField = Object.fromEntries(Object.entries(sortField).map(([c, f]) => [f, c])) as Record<IocOrderField, string>;
/** descFirst are the columns whose first click sorts highest or latest first, as an analyst wants them. */
const descFirst = new Set(['score', 'firstSeen', 'lastSeen', 'expirationDate']);

function TimeCell({ iso }: { iso: string }) {
  return <time dateTime={iso} title={formatRelative(iso)}>{formatDateTime(iso)}</time>;
}

/** IocsPage searches the stored indicators; a row opens a drawer with every sighting. */
export function IocsPage() {
  const { user } = useAuth();
  // Feeds are root-only: a tenant user gets no feed filter and no feed links.
  const root = isRoot(user?.scope);
  const [params, setParams] = useSearchParams();
  const state = useMemo(() => iocStateFromParams(params), [params]);
  const setState = (s: IocTableState) => setParams(iocStateToParams(s));
  const [searchText, setSearchText] = useState(state.search);
  const [tagText, setTagText] = useState(state.tag);
  const debouncedSearch = useDebounced(searchText, 300);
  const debouncedTag = useDebounced(tagText, 300);
  const [openId, setOpenId] = useState<string | null>(null);
  const [showLookup, setShowLookup] = useState(false);

  useEffect(() => {
    if (debouncedSearch !== state.search || debouncedTag !== state.tag)
      setParams(iocStateToParams({ ...state, search: debouncedSearch, tag: debouncedTag }), { replace: true });
  }, [debouncedSearch, debouncedTag]);
  useEffect(() => {
    setSearchText(state.search);
    setTagText(state.tag);
  }, [state.search, state.tag]);
  // Any change of what is shown starts again from the first page.
  const pages = useCursorPages(params.toString(), PAGE_SIZE);

  const problems = iocFilterProblems(state);
  const valid = Object.keys(problems).length === 0;
  const vars = { filter: iocFilterInput(state), orderBy: iocOrderInput(state), first: pages.first, after: pages.after };
  const iocs = useQuery({
    queryKey: ['iocs', vars],
    queryFn: () => request(IocsQuery, vars),
    placeholderData: keepPreviousData,
    // An out-of-range filter is shown beside its field; the table waits for it.
    enabled: valid,
  });
  const feedOptions = useQuery({ queryKey: ['feedOptions'], queryFn: () => request(FeedOptionsQuery), staleTime: 60_000, enabled: root });

  const columns = useMemo(
    () => [
      col.accessor('type', { header: 'Type', cell: (c) => <span className="pill">{iocTypeLabels[c.getValue()]}</span> }),
      col.accessor('value', {
        header: 'Value',
        cell: (c) => (
          <button type="button" className="btn-link mono break" onClick={() => setOpenId(c.row.original.id)}>
            {c.getValue()}
          </button>
        ),
      }),
      col.accessor('score', { header: 'Score', cell: (c) => <Score value={c.getValue()} /> }),
      col.accessor('tags', { header: 'Tags', cell: (c) => <Tags tags={c.getValue()} /> }),
      col.accessor('sources', {
        header: 'Sources',
        cell: (c) => (
          <span className="sources">
            {c.getValue().map((s, i) => (
              <span key={i} className="source">
                {s.source} <span className="muted">· {s.feed.name}</span>
              </span>
            ))}
          </span>
        ),
      }),
      col.accessor('warnings', {
        header: 'Warnings',
        cell: (c) => (
          <span className="tags">
            {c.getValue().map((w) => (
              <span key={w.list} className="tag tag-warning" title={`${w.list}: ${w.entry}`}>
                {w.list}
              </span>
            ))}
          </span>
        ),
      }),
      col.accessor('firstSeen', { header: 'First Seen', cell: (c) => <TimeCell iso={c.getValue()} /> }),
      col.accessor('lastSeen', { header: 'Last Seen', cell: (c) => <TimeCell iso={c.getValue()} /> }),
      col.accessor('expirationDate', { header: 'Expiration Date', cell: (c) => <TimeCell iso={c.getValue()} /> }),
    ],
    [],
  );
  const data = iocs.data?.iocs;
  const sorting: SortingState = [{ id: columnOfField[state.sort.field], desc: state.sort.direction === 'DESC' }];
  const table = useReactTable({
    data: data?.nodes ?? [],
    columns,
    getRowId: (r) => r.id,
    getCoreRowModel: getCoreRowModel(),
    manualSorting: true,
    // There is always an order (newest first by default): a click toggles, never removes it.
    enableSortingRemoval: false,
    enableMultiSort: false,
    sortDescFirst: false,
    state: { sorting },
    onSortingChange: (updater) => {
      const next = (typeof updater === 'function' ? updater(sorting) : updater)[0];
      const field = next && sortField[next.id];
      if (!field) return;
      // A new column starts in its natural direction: highest and latest first for scores and times.
      const desc = next.id === sorting[0]?.id ? next.desc : descFirst.has(next.id);
      setState({ ...state, sort: { field, direction: desc ? 'DESC' : 'ASC' } });
    },
  });
  const filtering = !!iocFilterInput(state) || !valid;

  return (
    <Page
      id="iocs"
      title="Indicators of compromise"
      description="Every indicator the feeds brought in, deduplicated, with its sightings."
      actions={
        <div className="row-actions">
          <button type="button" className={showLookup ? 'btn btn-toggle active' : 'btn btn-toggle'} aria-expanded={showLookup} onClick={() => setShowLookup((v) => !v)}>
            Bulk lookup
          </button>
          <details className="menu menu-right">
            <summary className="btn">Export</summary>
            <div className="menu-pop" role="group" aria-label="Export indicators">
              {valid ? (
                <>
                  <a className="btn btn-small" href={iocExportURL(state, 'csv')} download>
                    CSV
                  </a>
                  <a className="btn btn-small" href={iocExportURL(state, 'txt')} download>
                    Plain text (one value per line)
                  </a>
                  <small className="hint">With the current filters.</small>
                </>
              ) : (
                <small className="hint">Correct the filters first.</small>
              )}
            </div>
          </details>
        </div>
      }
    >
      {showLookup && <IocLookup onOpen={setOpenId} />}
      <form className="filters-bar" role="search" aria-label="Filter indicators" onSubmit={(e) => e.preventDefault()}>
        <label className="stack-label grow">
          Search
          <input type="search" placeholder="Value, source or tag…" value={searchText} onChange={(e) => setSearchText(e.target.value)} />
        </label>
        <fieldset className="type-filter">
          <legend>Type</legend>
          {iocTypes.map((t) => (
            <label key={t} className={state.types.includes(t) ? 'seg seg-on' : 'seg'}>
              <input
                type="checkbox"
                checked={state.types.includes(t)}
                onChange={() =>
                  setState({ ...state, types: state.types.includes(t) ? state.types.filter((x) => x !== t) : [...state.types, t as IocType] })
                }
              />
              {iocTypeLabels[t]}
            </label>
          ))}
        </fieldset>
        {root && (
          <label className="stack-label">
            Feed
            <select value={state.feedId} onChange={(e) => setState({ ...state, feedId: e.target.value })}>
              <option value="">All feeds</option>
              {feedOptions.data?.feeds.nodes.map((f) => (
                <option key={f.id} value={f.id}>
                  {f.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <label className="stack-label">
          Tag
          <input value={tagText} onChange={(e) => setTagText(e.target.value)} placeholder="e.g. emerging_threat" />
        </label>
        <label className="stack-label">
          Warnings
          <select value={state.warnings} onChange={(e) => setState({ ...state, warnings: e.target.value as IocTableState['warnings'] })}>
            <option value="">Any</option>
            <option value="FLAGGED">Flagged only</option>
            <option value="UNFLAGGED">Unflagged only</option>
          </select>
        </label>
        <FilterInput label="Min score" className="narrow" problem={problems.minScore}>
          {(describedBy) => (
            <input
              type="number"
              min={0}
              max={100}
              inputMode="numeric"
              value={state.minScore}
              aria-invalid={!!problems.minScore}
              aria-describedby={describedBy}
              onChange={(e) => setState({ ...state, minScore: e.target.value })}
            />
          )}
        </FilterInput>
        <FilterInput label="Expires after" problem={problems.expiresAfter}>
          {(describedBy) => (
            <input
              type="datetime-local"
              value={toDateTimeLocal(state.expiresAfter)}
              aria-invalid={!!problems.expiresAfter}
              aria-describedby={describedBy}
              onChange={(e) => setState({ ...state, expiresAfter: fromDateTimeLocal(e.target.value) ?? '' })}
            />
          )}
        </FilterInput>
        <FilterInput label="Expires before" problem={problems.expiresBefore}>
          {(describedBy) => (
            <input
              type="datetime-local"
              value={toDateTimeLocal(state.expiresBefore)}
              aria-invalid={!!problems.expiresBefore}
              aria-describedby={describedBy}
              onChange={(e) => setState({ ...state, expiresBefore: fromDateTimeLocal(e.target.value) ?? '' })}
            />
          )}
        </FilterInput>
        {filtering && (
          <button type="button" className="btn btn-link" onClick={() => { setSearchText(''); setTagText(''); setState({ ...emptyIocTableState, sort: state.sort }); }}>
            Clear all
          </button>
        )}
      </form>

      {!valid ? (
        <EmptyState title="These filters cannot be applied.">
          <p className="muted" data-testid="filter-problems">
            {Object.values(problems).join(' ')} Correct them to see indicators.
          </p>
        </EmptyState>
      ) : (
      <QueryView
        query={iocs}
        stale
        loading="Loading indicators…"
        isEmpty={(d) => d.iocs.nodes.length === 0}
        empty={
          <EmptyState title={filtering ? 'No indicator matches.' : 'No indicators yet.'}>
            <p className="muted">
              {filtering ? 'Loosen the filters to see more.' : root ? <>Indicators appear here once a <Link to="/feeds">feed</Link> has run.</> : 'Indicators appear here once the feeds have run.'}
            </p>
          </EmptyState>
        }
      >
        {(d) => (
          <>
            <DataTable
              table={table}
              label="Indicators"
              busy={iocs.isFetching}
              sortable={(id) => !!sortField[id]}
              row={(i) => ({ 'data-ioc-value': i.value })}
            />
            <CursorPager pages={pages} connection={d.iocs} noun="indicators" resizable />
          </>
        )}
      </QueryView>
      )}
      {openId && <IocDrawer id={openId} root={root} onClose={() => setOpenId(null)} />}
    </Page>
  );
}

/** FilterInput is a labelled filter of the bar; its problem (an out-of-range value) is said beside it. */
function FilterInput(props: { label: string; className?: string; problem?: string; children: (describedBy: string | undefined) => ReactNode }) {
  const errId = useId();
  return (
    <div className={['filter-field', props.className, props.problem && 'field-invalid'].filter(Boolean).join(' ')}>
      <label className="stack-label">
        {props.label}
        {props.children(props.problem ? errId : undefined)}
      </label>
      {props.problem && (
        <small id={errId} className="field-error" role="alert">
          {props.problem}
        </small>
      )}
    </div>
  );
}

function Score({ value }: { value: number }) {
  return <span className={`score score-${scoreLevel(value)}`}>{value}</span>;
}

function Tags({ tags }: { tags: string[] }) {
  return (
    <span className="tags">
      {tags.map((t) => (
        <span key={t} className="tag">
          {t}
        </span>
      ))}
    </span>
  );
}

function IocDrawer({ id, root, onClose }: { id: string; root: boolean; onClose: () => void }) {
  const q = useQuery({ queryKey: ['ioc', id], queryFn: () => request(IocQuery, { id }) });
  const toast = useToast();
  const copy = (text: string, what: string) =>
    copyText(text).then(
      () => toast.success(`Copied ${what}: ${text.length > 80 ? `${text.slice(0, 80)}…` : text}`),
      (err) => toast.error(errorMessage(err)),
    );
  const defanged = q.data ? defang(q.data.ioc.type, q.data.ioc.value) : null;
  return (
    <Drawer title="Indicator" onClose={onClose}>
      {q.isPending ? (
        <Spinner />
      ) : q.error ? (
        <ErrorBox error={errorMessage(q.error)} onRetry={() => void q.refetch()} />
      ) : (
        <>
          <p className="mono break big-value" data-testid="ioc-value">{q.data.ioc.value}</p>
          <div className="row-actions" role="group" aria-label="Copy the indicator">
            <button type="button" className="btn btn-small" onClick={() => void copy(q.data.ioc.value, 'the value')}>
              Copy
            </button>
            {defanged !== null && (
              <button
                type="button"
                className="btn btn-small"
                title={`Copies ${defanged}, which no chat or ticket turns into a live link`}
                onClick={() => void copy(defanged, 'defanged')}
              >
                Copy defanged
              </button>
            )}
          </div>
          <dl className="facts">
            <div><dt>Type</dt><dd>{iocTypeLabels[q.data.ioc.type]}</dd></div>
            <div><dt>Score</dt><dd><Score value={q.data.ioc.score} /></dd></div>
            <div><dt>First seen</dt><dd>{formatDateTime(q.data.ioc.firstSeen)}</dd></div>
            <div><dt>Last seen</dt><dd>{formatDateTime(q.data.ioc.lastSeen)}</dd></div>
            <div><dt>Expires</dt><dd>{formatDateTime(q.data.ioc.expirationDate)} <span className="muted">(<RelativeTime iso={q.data.ioc.expirationDate} />)</span></dd></div>
            <div className="wide"><dt>Tags</dt><dd><Tags tags={q.data.ioc.tags} /></dd></div>
          </dl>
          <h3 className="section-title">Sightings ({q.data.ioc.sources.length})</h3>
          <ul className="sightings">
            {q.data.ioc.sources.map((s, i) => (
              <li key={i} className="card sighting">
                <div className="sighting-head">
                  <strong>{s.source}</strong>
                  <Score value={s.score} />
                </div>
                <p className="muted">
                  via {root ? <Link to={`/feeds/${s.feed.id}`} onClick={onClose}>{s.feed.name}</Link> : s.feed.name}
                </p>
                <Tags tags={s.tags} />
                <p className="small muted">
                  seen {formatDateTime(s.firstSeen)} – {formatDateTime(s.lastSeen)} · expires {formatDateTime(s.expiresAt)}
                </p>
              </li>
            ))}
          </ul>
        </>
      )}
    </Drawer>
  );
}
