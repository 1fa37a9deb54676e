import type { SaveViewInput, ViewsQuery } from '../gql/graphql';
import { feedColumns } from './feedColumns';
import { feedFilterInput, feedFilterKeys, isOrderField, type FeedTableState } from './feedFilters';

/** SavedFeedView is one saved view of the feeds table as the API returns it. */
export type SavedFeedView = ViewsQuery['views'][number];

/** viewInput turns the table as it is now into a saveView input. */
export function viewInput(
  name: string,
  state: FeedTableState,
  visibility: Record<string, boolean>,
  isDefault: boolean,
): SaveViewInput {
  return {
    table: 'FEEDS',
    name: name.trim(),
    columns: feedColumns.filter((c) => visibility[c] !== false),
    filter: (feedFilterInput(state) ?? {}) as Record<string, unknown>,
    search: state.search.trim(),
    orderBy: state.sort ? { field: state.sort.field, direction: state.sort.direction } : undefined,
    isDefault,
  };
}

/**
 * viewState is the inverse of viewInput: the table state and column
 * visibility a saved view stands for. Unknown filter keys are ignored, so a
 * view saved by a newer dashboard still opens.
 */
export function viewState(view: SavedFeedView): { state: FeedTableState; visibility: Record<string, boolean> } {
  const state: FeedTableState = { search: view.search ?? '', filter: {} };
  const f = (view.filter ?? {}) as Record<string, unknown>;
  for (const key of feedFilterKeys) {
    const vs = f[key];
    if (Array.isArray(vs) && vs.length) state.filter[key] = vs.map((v) => String(v));
  }
  if (typeof f.lastIngestionFrom === 'string') state.lastIngestionFrom = f.lastIngestionFrom;
  if (typeof f.lastIngestionTo === 'string') state.lastIngestionTo = f.lastIngestionTo;
  if (view.orderBy && isOrderField(view.orderBy.field)) {
    state.sort = { field: view.orderBy.field, direction: view.orderBy.direction };
  }
  const shown = new Set(view.columns);
  const visibility: Record<string, boolean> = {};
  for (const c of feedColumns) visibility[c] = shown.size === 0 || shown.has(c);
  return { state, visibility };
}
