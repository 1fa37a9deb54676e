import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { createColumnHelper, getCoreRowModel, useReactTable } from '@tanstack/react-table';
import { useEffect, useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { FeedOptionsQuery, IocQuery, IocsQuery } from '../api';
import { DataTable } from '../components/dataTable';
import { CursorPager, Drawer, EmptyState, ErrorBox, Page, QueryView, Spinner, useDebounced } from '../components/ui';
import { IocLookup } from './IocLookup';
import type { IocsQuery as IocsResult, IocType } from '../gql/graphql';
import { errorMessage } from '../lib/errors';
import { formatDateTime, formatRelative, fromDateTimeLocal, toDateTimeLocal } from '../lib/format';
import { iocExportURL } from '../lib/exportCsv';
import { useCursorPages } from '../lib/cursorPages';
import { request } from '../lib/graphql';
import {
  emptyIocTableState,
  iocFilterInput,
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

/** IocsPage searches the stored indicators; a row opens a drawer with every sighting. */
export function IocsPage() {
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

  const vars = { filter: iocFilterInput(state), first: pages.first, after: pages.after };
  const iocs = useQuery({
    queryKey: ['iocs', vars],
    queryFn: () => request(IocsQuery, vars),
    placeholderData: keepPreviousData,
  });
  const feedOptions = useQuery({ queryKey: ['feedOptions'], queryFn: () => request(FeedOptionsQuery), staleTime: 60_000 });

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
      col.accessor('expirationDate', {
        header: 'Expiration Date',
        cell: (c) => <time title={formatRelative(c.getValue())}>{formatDateTime(c.getValue())}</time>,
      }),
    ],
    [],
  );
  const data = iocs.data?.iocs;
  const table = useReactTable({ data: data?.nodes ?? [], columns, getRowId: (r) => r.id, getCoreRowModel: getCoreRowModel() });
  const filtering = !!iocFilterInput(state);

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
              <a className="btn btn-small" href={iocExportURL(state, 'csv')} download>
                CSV
              </a>
              <a className="btn btn-small" href={iocExportURL(state, 'txt')} download>
                Plain text (one value per line)
              </a>
              <small className="hint">With the current filters.</small>
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
        <label className="stack-label">
          Tag
          <input value={tagText} onChange={(e) => setTagText(e.target.value)} placeholder="e.g. emerging_threat" />
        </label>
        <label className="stack-label narrow">
          Min score
          <input type="number" min={0} max={100} inputMode="numeric" value={state.minScore} onChange={(e) => setState({ ...state, minScore: e.target.value })} />
        </label>
        <label className="stack-label">
          Expires after
          <input type="datetime-local" value={toDateTimeLocal(state.expiresAfter)} onChange={(e) => setState({ ...state, expiresAfter: fromDateTimeLocal(e.target.value) ?? '' })} />
        </label>
        <label className="stack-label">
          Expires before
          <input type="datetime-local" value={toDateTimeLocal(state.expiresBefore)} onChange={(e) => setState({ ...state, expiresBefore: fromDateTimeLocal(e.target.value) ?? '' })} />
        </label>
        {filtering && (
          <button type="button" className="btn btn-link" onClick={() => { setSearchText(''); setTagText(''); setState(emptyIocTableState); }}>
            Clear all
          </button>
        )}
      </form>

      <QueryView
        query={iocs}
        stale
        loading="Loading indicators…"
        isEmpty={(d) => d.iocs.nodes.length === 0}
        empty={
          <EmptyState title={filtering ? 'No indicator matches.' : 'No indicators yet.'}>
            <p className="muted">{filtering ? 'Loosen the filters to see more.' : <>Indicators appear here once a <Link to="/feeds">feed</Link> has run.</>}</p>
          </EmptyState>
        }
      >
        {(d) => (
          <>
            <DataTable table={table} label="Indicators" busy={iocs.isFetching} row={(i) => ({ 'data-ioc-value': i.value })} />
            <CursorPager pages={pages} connection={d.iocs} noun="indicators" />
          </>
        )}
      </QueryView>
      {openId && <IocDrawer id={openId} onClose={() => setOpenId(null)} />}
    </Page>
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

function IocDrawer({ id, onClose }: { id: string; onClose: () => void }) {
  const q = useQuery({ queryKey: ['ioc', id], queryFn: () => request(IocQuery, { id }) });
  return (
    <Drawer title="Indicator" onClose={onClose}>
      {q.isPending ? (
        <Spinner />
      ) : q.error ? (
        <ErrorBox error={errorMessage(q.error)} onRetry={() => void q.refetch()} />
      ) : (
        <>
          <p className="mono break big-value">{q.data.ioc.value}</p>
          <dl className="facts">
            <div><dt>Type</dt><dd>{iocTypeLabels[q.data.ioc.type]}</dd></div>
            <div><dt>Score</dt><dd><Score value={q.data.ioc.score} /></dd></div>
            <div><dt>First seen</dt><dd>{formatDateTime(q.data.ioc.firstSeen)}</dd></div>
            <div><dt>Last seen</dt><dd>{formatDateTime(q.data.ioc.lastSeen)}</dd></div>
            <div><dt>Expires</dt><dd>{formatDateTime(q.data.ioc.expirationDate)} <span className="muted">({formatRelative(q.data.ioc.expirationDate)})</span></dd></div>
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
                  via <Link to={`/feeds/${s.feed.id}`} onClick={onClose}>{s.feed.name}</Link>
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
