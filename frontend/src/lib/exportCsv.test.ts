import { describe, expect, test } from 'vitest';
import { feedExportURL, iocExportURL } from './exportCsv';
import { emptyIocTableState } from './iocFilters';

describe('feedExportURL', () => {
  test('all columns and no filters is the bare address', () => {
    expect(feedExportURL({ search: '', filter: {} }, null)).toBe('/api/export/feeds.csv');
  });
  test('selected columns leave out the icon and the actions', () => {
    const u = new URL(feedExportURL({ search: '', filter: {} }, ['icon', 'name', 'status', 'actions']), 'http://x');
    expect(u.searchParams.get('columns')).toBe('name,status');
  });
  test('search, typed filter and order travel with the export', () => {
    const u = new URL(
      feedExportURL(
        { search: ' acme ', filter: { type: ['CUSTOM'], pollingFrequency: ['4'] }, sort: { field: 'NAME', direction: 'DESC' } },
        null,
      ),
      'http://x',
    );
    expect(u.searchParams.get('search')).toBe('acme');
    expect(JSON.parse(u.searchParams.get('filter')!)).toEqual({ type: ['CUSTOM'], pollingFrequency: [4] });
    expect(u.searchParams.get('orderBy')).toBe('NAME');
    expect(u.searchParams.get('direction')).toBe('DESC');
    expect(u.searchParams.has('columns')).toBe(false);
  });
});

describe('iocExportURL', () => {
  test('no filters', () => {
    expect(iocExportURL(emptyIocTableState, 'txt')).toBe('/api/export/iocs.txt');
  });
  test('the table filters travel as IocFilter JSON', () => {
    const u = new URL(iocExportURL({ ...emptyIocTableState, types: ['IP'], minScore: '80', tag: 'x' }, 'csv'), 'http://x');
    expect(u.pathname).toBe('/api/export/iocs.csv');
    expect(JSON.parse(u.searchParams.get('filter')!)).toEqual({ type: ['IP'], minScore: 80, tag: 'x' });
  });
});
