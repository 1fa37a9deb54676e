import { feedFilterInput, type FeedTableState } from './feedFilters';
import { iocFilterInput, type IocTableState } from './iocFilters';

/**
 * nonData are the feed columns the CSV leaves out: the icon, the action
 * buttons, and the live figures (IoC count, next run) that are not the
 * feed's settings or state.
 */
const nonData = new Set(['icon', 'actions', 'iocCount', 'nextRun']);

/**
 * feedExportURL is the address of the feeds CSV export for the table as it
 * is: the same search and filter (as FeedFilter JSON), the same order, and
 * either the visible columns or all of them (no columns parameter).
 */
export function feedExportURL(state: FeedTableState, visibleColumns: readonly string[] | null): string {
  const p = new URLSearchParams();
  if (visibleColumns) p.set('columns', visibleColumns.filter((c) => !nonData.has(c)).join(','));
  if (state.search.trim()) p.set('search', state.search.trim());
  const filter = feedFilterInput(state);
  if (filter) p.set('filter', JSON.stringify(filter));
  if (state.sort) {
    p.set('orderBy', state.sort.field);
    p.set('direction', state.sort.direction);
  }
  const q = p.toString();
  return `/api/export/feeds.csv${q ? `?${q}` : ''}`;
}

/**
 * iocExportURL is the address of the IoC export with the table's filters:
 * CSV, or plain text with one value per line (for firewalls' external
 * dynamic lists).
 */
export function iocExportURL(state: IocTableState, format: 'csv' | 'txt'): string {
  const filter = iocFilterInput(state);
  const q = filter ? `?${new URLSearchParams({ filter: JSON.stringify(filter) })}` : '';
  return `/api/export/iocs.${format}${q}`;
}
