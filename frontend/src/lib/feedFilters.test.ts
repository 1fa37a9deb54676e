import { describe, expect, test } from 'vitest';
import {
  activeFilterCount,
  clearAllFilters,
  clearFilter,
  facetValueLabel,
  feedFilterInput,
  feedQueryVariables,
  feedStateFromParams,
  feedStateToParams,
  toggleFilterValue,
  type FeedTableState,
} from './feedFilters';

describe('feedFilterInput', () => {
  const cases: Record<string, { state: FeedTableState; want: ReturnType<typeof feedFilterInput> }> = {
    'nothing filters': { state: { search: 'x', filter: {} }, want: undefined },
    'empty lists are dropped': { state: { search: '', filter: { name: [], type: [] } }, want: undefined },
    'strings pass through': {
      state: { search: '', filter: { name: ['TSV_acme', 'OTX'], statusMessage: ['Success'], description: [''] } },
      want: { name: ['TSV_acme', 'OTX'], statusMessage: ['Success'], description: [''] },
    },
    'enums keep known values only': {
      state: { search: '', filter: { type: ['CUSTOM', 'bogus', 'PREMIUM'] } },
      want: { type: ['CUSTOM', 'PREMIUM'] },
    },
    'booleans from facet strings': {
      state: { search: '', filter: { enabled: ['true', 'false', 'maybe'] } },
      want: { enabled: [true, false] },
    },
    'integers from facet strings': {
      state: { search: '', filter: { pollingFrequency: ['2', '24'], retentionPeriod: ['30'], backfillDays: ['x', '7'] } },
      want: { pollingFrequency: [2, 24], retentionPeriod: [30], backfillDays: [7] },
    },
    'a column of only bad values is dropped': {
      state: { search: '', filter: { pollingFrequency: ['two'] } },
      want: undefined,
    },
    'last ingestion range': {
      state: { search: '', filter: {}, lastIngestionFrom: '2026-01-01T00:00:00.000Z', lastIngestionTo: '2026-02-01T00:00:00.000Z' },
      want: { lastIngestionFrom: '2026-01-01T00:00:00.000Z', lastIngestionTo: '2026-02-01T00:00:00.000Z' },
    },
  };
  for (const [name, c] of Object.entries(cases)) {
    test(name, () => expect(feedFilterInput(c.state)).toEqual(c.want));
  }
});

describe('feedQueryVariables', () => {
  test('trims the search and passes sort and paging', () => {
    const v = feedQueryVariables({ search: '  acme ', filter: { type: ['CUSTOM'] }, sort: { field: 'NAME', direction: 'DESC' } }, 25, 'c1');
    expect(v).toEqual({ search: 'acme', filter: { type: ['CUSTOM'] }, orderBy: { field: 'NAME', direction: 'DESC' }, first: 25, after: 'c1' });
  });
  test('a blank search and the first page send nothing extra', () => {
    const v = feedQueryVariables({ search: '   ', filter: {} }, 10, null);
    expect(v).toEqual({ search: undefined, filter: undefined, orderBy: undefined, first: 10, after: undefined });
  });
});

describe('URL parameters', () => {
  const cases: Record<string, FeedTableState> = {
    empty: { search: '', filter: {} },
    'search only': { search: 'botnet feeds', filter: {} },
    'every filter': {
      search: 'a&b=c',
      filter: {
        name: ['TSV_a', 'TAXII_b'],
        type: ['CUSTOM'],
        statusMessage: ['Connection Error'],
        enabled: ['false'],
        pollingFrequency: ['1', '24'],
        retentionPeriod: ['30'],
        backfillDays: ['7'],
        description: ['with, comma'],
      },
      lastIngestionFrom: '2026-11-01T00:00:00.000Z',
      lastIngestionTo: '2026-11-21T12:30:00.000Z',
      sort: { field: 'LAST_INGESTION', direction: 'DESC' },
    },
  };
  for (const [name, state] of Object.entries(cases)) {
    test(`round trip: ${name}`, () => {
      const params = new URLSearchParams(feedStateToParams(state).toString());
      expect(feedStateFromParams(params)).toEqual(state);
    });
  }

  test('ignores unknown sort fields and bad dates', () => {
    const s = feedStateFromParams(new URLSearchParams('sort=DROP_TABLE:ASC&from=yesterday&to=2026-01-01T00:00:00Z&color=red'));
    expect(s).toEqual({ search: '', filter: {}, lastIngestionTo: '2026-01-01T00:00:00Z' });
  });

  test('defaults the sort direction to ascending and drops duplicate values', () => {
    const s = feedStateFromParams(new URLSearchParams('sort=NAME&type=CUSTOM&type=CUSTOM'));
    expect(s.sort).toEqual({ field: 'NAME', direction: 'ASC' });
    expect(s.filter.type).toEqual(['CUSTOM']);
  });
});

describe('filter editing', () => {
  const base: FeedTableState = {
    search: 'q',
    filter: { type: ['CUSTOM'], enabled: ['true'] },
    lastIngestionFrom: '2026-01-01T00:00:00Z',
    sort: { field: 'NAME', direction: 'ASC' },
  };
  test('toggle adds a value', () => {
    expect(toggleFilterValue(base, 'type', 'PREMIUM').filter.type).toEqual(['CUSTOM', 'PREMIUM']);
  });
  test('toggle removes a value and the emptied key', () => {
    const s = toggleFilterValue(base, 'enabled', 'true');
    expect('enabled' in s.filter).toBe(false);
    expect(base.filter.enabled).toEqual(['true']); // the old state is untouched
  });
  test('clear one key', () => {
    expect(clearFilter(base, 'type').filter).toEqual({ enabled: ['true'] });
  });
  test('clear the date range', () => {
    const s = clearFilter(base, 'lastIngestion');
    expect(s.lastIngestionFrom).toBeUndefined();
    expect(s.filter).toEqual(base.filter);
  });
  test('clear all keeps search and sort', () => {
    expect(clearAllFilters(base)).toEqual({ search: 'q', filter: {}, sort: base.sort });
  });
  test('count is one per value and per date bound', () => {
    expect(activeFilterCount(base)).toBe(3);
    expect(activeFilterCount(clearAllFilters(base))).toBe(0);
  });
});

describe('facetValueLabel', () => {
  const cases: Record<string, [Parameters<typeof facetValueLabel>, string]> = {
    'enabled true': [['enabled', 'true'], 'Enabled'],
    'enabled false': [['enabled', 'false'], 'Disabled'],
    'type by spec name': [['type', 'BUILTIN'], 'Built-in'],
    'empty description': [['description', ''], '(empty)'],
    'one hour': [['pollingFrequency', '1'], '1 hour'],
    hours: [['pollingFrequency', '24'], '24 hours'],
    days: [['retentionPeriod', '30'], '30 days'],
    'one backfill day': [['backfillDays', '1'], '1 day'],
    'names stay as they are': [['name', 'TSV_42'], 'TSV_42'],
  };
  for (const [name, [args, want]] of Object.entries(cases)) {
    test(name, () => expect(facetValueLabel(...args)).toBe(want));
  }
});
