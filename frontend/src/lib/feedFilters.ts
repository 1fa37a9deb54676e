import type {
  FeedFacetColumn,
  FeedFilter,
  FeedOrderField,
  FeedStatus,
  FeedType,
  OrderDirection,
} from '../gql/graphql';
import { feedColumnLabels, type FeedColumn } from './feedColumns';

/** feedFilterKeys lists the list filters of FeedFilter in the order the filter panel shows them. */
export const feedFilterKeys = [
  'name',
  'type',
  'status',
  'statusMessage',
  'enabled',
  'pollingFrequency',
  'retentionPeriod',
  'backfillDays',
  'description',
] as const satisfies readonly FeedColumn[];

/** FeedFilterKey names a list filter of FeedFilter; each filters the column of that id. */
export type FeedFilterKey = (typeof feedFilterKeys)[number];

/** feedFilterLabels names a filter as its column is named. */
export const feedFilterLabels = Object.fromEntries(feedFilterKeys.map((k) => [k, feedColumnLabels[k]])) as Record<FeedFilterKey, string>;

/** facetColumnKey maps the API's facet column to the filter it feeds. */
export const facetColumnKey: Record<FeedFacetColumn, FeedFilterKey> = {
  NAME: 'name',
  TYPE: 'type',
  STATUS_MESSAGE: 'statusMessage',
  ENABLED: 'enabled',
  POLLING_FREQUENCY: 'pollingFrequency',
  RETENTION_PERIOD: 'retentionPeriod',
  BACKFILL_DAYS: 'backfillDays',
  DESCRIPTION: 'description',
};

/**
 * FeedTableState is everything that decides which feeds the table shows.
 * Filter values are kept as the strings facets give them ("true", "24",
 * "CUSTOM") and typed only when building query variables.
 */
export interface FeedTableState {
  search: string;
  filter: Partial<Record<FeedFilterKey, string[]>>;
  lastIngestionFrom?: string;
  lastIngestionTo?: string;
  sort?: { field: FeedOrderField; direction: OrderDirection };
}

export const emptyFeedTableState: FeedTableState = { search: '', filter: {} };

const orderFields: readonly FeedOrderField[] = [
  'NAME',
  'TYPE',
  'STATUS',
  'STATUS_MESSAGE',
  'ENABLED',
  'POLLING_FREQUENCY',
  'RETENTION_PERIOD',
  'BACKFILL_DAYS',
  'DESCRIPTION',
  'LAST_INGESTION',
];
const feedTypes: readonly FeedType[] = ['BUILTIN', 'CUSTOM', 'PREMIUM'];

/** feedStatuses are the values of the status filter; the server derives no facet for it. */
export const feedStatuses: readonly FeedStatus[] = ['SUCCESS', 'ERROR', 'DISABLED'];
const intKeys = new Set<FeedFilterKey>(['pollingFrequency', 'retentionPeriod', 'backfillDays']);

/** isOrderField reports whether s names a sortable feed column. */
export function isOrderField(s: string): s is FeedOrderField {
  return (orderFields as readonly string[]).includes(s);
}

/**
 * feedFilterInput builds the API's FeedFilter from the table state, dropping
 * values that cannot be what their column holds; undefined when nothing filters.
 */
export function feedFilterInput(state: FeedTableState): FeedFilter | undefined {
  const f: FeedFilter = {};
  for (const key of feedFilterKeys) {
    const values = state.filter[key];
    if (!values?.length) continue;
    if (key === 'type') {
      const ts = values.filter((v): v is FeedType => (feedTypes as readonly string[]).includes(v));
      if (ts.length) f.type = ts;
    } else if (key === 'status') {
      const ss = values.filter((v): v is FeedStatus => (feedStatuses as readonly string[]).includes(v));
      if (ss.length) f.status = ss;
    } else if (key === 'enabled') {
      const bs = values.filter((v) => v === 'true' || v === 'false').map((v) => v === 'true');
      if (bs.length) f.enabled = bs;
    } else if (intKeys.has(key)) {
      const ns = values.filter((v) => /^-?\d+$/.test(v)).map(Number);
      if (ns.length) f[key as 'pollingFrequency' | 'retentionPeriod' | 'backfillDays'] = ns;
    } else {
      f[key as 'name' | 'statusMessage' | 'description'] = values;
    }
  }
  if (state.lastIngestionFrom) f.lastIngestionFrom = state.lastIngestionFrom;
  if (state.lastIngestionTo) f.lastIngestionTo = state.lastIngestionTo;
  return Object.keys(f).length ? f : undefined;
}

/** feedQueryVariables is the variables of the feeds query for one page. */
export function feedQueryVariables(state: FeedTableState, first: number, after?: string | null) {
  return {
    search: state.search.trim() || undefined,
    filter: feedFilterInput(state),
    orderBy: state.sort ? { field: state.sort.field, direction: state.sort.direction } : undefined,
    first,
    after: after ?? undefined,
  };
}

/** activeFilterCount counts the chips the toolbar shows (one per value, one per date bound). */
export function activeFilterCount(state: FeedTableState): number {
  let n = 0;
  for (const key of feedFilterKeys) n += state.filter[key]?.length ?? 0;
  if (state.lastIngestionFrom) n++;
  if (state.lastIngestionTo) n++;
  return n;
}

/** toggleFilterValue adds value to the key's list, or removes it when present. */
export function toggleFilterValue(state: FeedTableState, key: FeedFilterKey, value: string): FeedTableState {
  const cur = state.filter[key] ?? [];
  const next = cur.includes(value) ? cur.filter((v) => v !== value) : [...cur, value];
  const filter = { ...state.filter };
  if (next.length) filter[key] = next;
  else delete filter[key];
  return { ...state, filter };
}

/** clearFilter removes one key's filter (all its values); "lastIngestion" clears both date bounds. */
export function clearFilter(state: FeedTableState, key: FeedFilterKey | 'lastIngestion'): FeedTableState {
  if (key === 'lastIngestion') {
    const { lastIngestionFrom: _f, lastIngestionTo: _t, ...rest } = state;
    return rest;
  }
  const filter = { ...state.filter };
  delete filter[key];
  return { ...state, filter };
}

/** clearAllFilters keeps the search and sort, and drops every filter. */
export function clearAllFilters(state: FeedTableState): FeedTableState {
  return { search: state.search, sort: state.sort, filter: {} };
}

/**
 * feedStateToParams writes the state into URL search parameters, so a filtered
 * table has a shareable address and back/forward restore it.
 */
export function feedStateToParams(state: FeedTableState): URLSearchParams {
  const p = new URLSearchParams();
  if (state.search) p.set('q', state.search);
  for (const key of feedFilterKeys) for (const v of state.filter[key] ?? []) p.append(key, v);
  if (state.lastIngestionFrom) p.set('from', state.lastIngestionFrom);
  if (state.lastIngestionTo) p.set('to', state.lastIngestionTo);
  if (state.sort) p.set('sort', `${state.sort.field}:${state.sort.direction}`);
  return p;
}

/** feedStateFromParams is the inverse of feedStateToParams; unknown parameters are ignored. */
export function feedStateFromParams(p: URLSearchParams): FeedTableState {
  const state: FeedTableState = { search: p.get('q') ?? '', filter: {} };
  for (const key of feedFilterKeys) {
    const vs = p.getAll(key);
    if (vs.length) state.filter[key] = [...new Set(vs)];
  }
  const from = p.get('from');
  const to = p.get('to');
  if (from && !Number.isNaN(Date.parse(from))) state.lastIngestionFrom = from;
  if (to && !Number.isNaN(Date.parse(to))) state.lastIngestionTo = to;
  const sort = p.get('sort');
  if (sort) {
    const [field, dir] = sort.split(':');
    if (isOrderField(field)) state.sort = { field, direction: dir === 'DESC' ? 'DESC' : 'ASC' };
  }
  return state;
}

/** facetValueLabel shows a facet value the way the table shows it. */
export function facetValueLabel(key: FeedFilterKey, value: string): string {
  if (key === 'status') return ({ SUCCESS: 'Success', ERROR: 'Error', DISABLED: 'Disabled' } as Record<string, string>)[value] ?? value;
  if (key === 'enabled') return value === 'true' ? 'Enabled' : value === 'false' ? 'Disabled' : value;
  if (key === 'type') return ({ BUILTIN: 'Built-in', CUSTOM: 'Custom', PREMIUM: 'Premium' } as Record<string, string>)[value] ?? value;
  if (key === 'description' && value === '') return '(empty)';
  if (/^\d+$/.test(value)) {
    if (key === 'pollingFrequency') return value === '1' ? '1 hour' : `${value} hours`;
    if (key === 'retentionPeriod' || key === 'backfillDays') return value === '1' ? '1 day' : `${value} days`;
  }
  return value;
}
