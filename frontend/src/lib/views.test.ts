import { describe, expect, test } from 'vitest';
import type { FeedTableState } from './feedFilters';
import { feedColumns } from './feedColumns';
import { viewInput, viewState, type SavedFeedView } from './views';

describe('saved views', () => {
  const state: FeedTableState = {
    search: 'acme',
    filter: { type: ['CUSTOM'], enabled: ['true'], pollingFrequency: ['4'], statusMessage: ['Success'] },
    lastIngestionFrom: '2026-11-01T00:00:00.000Z',
    sort: { field: 'LAST_INGESTION', direction: 'DESC' },
  };
  const visibility = { description: false, icon: false };

  test('input carries typed filters, visible columns in order, search and order', () => {
    expect(viewInput('  Mine ', state, visibility, true)).toEqual({
      table: 'FEEDS',
      name: 'Mine',
      columns: feedColumns.filter((c) => c !== 'description' && c !== 'icon'),
      filter: {
        type: ['CUSTOM'],
        enabled: [true],
        pollingFrequency: [4],
        statusMessage: ['Success'],
        lastIngestionFrom: '2026-11-01T00:00:00.000Z',
      },
      search: 'acme',
      orderBy: { field: 'LAST_INGESTION', direction: 'DESC' },
      isDefault: true,
    });
  });

  test('a saved view gives back the state it was saved from', () => {
    const input = viewInput('Mine', state, visibility, false);
    const saved: SavedFeedView = {
      id: '1',
      name: input.name,
      columns: input.columns,
      filter: input.filter ?? null,
      search: input.search ?? '',
      orderBy: input.orderBy ? { field: input.orderBy.field, direction: input.orderBy.direction ?? 'ASC' } : null,
      isDefault: false,
    };
    const got = viewState(saved);
    expect(got.state).toEqual(state);
    expect(got.visibility.description).toBe(false);
    expect(got.visibility.icon).toBe(false);
    expect(got.visibility.name).toBe(true);
  });

  test('unknown keys and order fields are ignored; no columns means all', () => {
    const got = viewState({
      id: '2',
      name: 'old',
      columns: [],
      filter: { colour: ['red'], name: ['OTX'] },
      search: '',
      orderBy: { field: 'COLOUR', direction: 'ASC' },
      isDefault: true,
    });
    expect(got.state).toEqual({ search: '', filter: { name: ['OTX'] } });
    expect(Object.values(got.visibility).every(Boolean)).toBe(true);
  });
});
