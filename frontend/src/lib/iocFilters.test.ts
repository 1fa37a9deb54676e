import { describe, expect, test } from 'vitest';
import {
  defaultIocSort,
  emptyIocTableState,
  iocFilterInput,
  iocFilterProblems,
  iocOrderInput,
  iocStateFromParams,
  iocStateToParams,
  scoreLevel,
  type IocTableState,
} from './iocFilters';

describe('iocFilterInput', () => {
  const cases: Record<string, { state: Partial<IocTableState>; want: ReturnType<typeof iocFilterInput> }> = {
    'nothing filters': { state: {}, want: undefined },
    'blank text is no filter': { state: { search: '  ', tag: ' ' }, want: undefined },
    'every filter': {
      state: {
        search: ' 203.0.113 ',
        types: ['IP', 'DOMAIN'],
        feedId: '7',
        tag: 'emerging_threat',
        minScore: '80',
        expiresAfter: '2026-11-01T00:00:00.000Z',
        expiresBefore: '2026-12-01T00:00:00.000Z',
      },
      want: {
        search: '203.0.113',
        type: ['IP', 'DOMAIN'],
        feedId: '7',
        tag: 'emerging_threat',
        minScore: 80,
        expiresAfter: '2026-11-01T00:00:00.000Z',
        expiresBefore: '2026-12-01T00:00:00.000Z',
      },
    },
    'a score out of range is left out, not clamped': { state: { minScore: '150', tag: 'x' }, want: { tag: 'x' } },
    'a non-integer score is left out': { state: { minScore: '7.5' }, want: undefined },
    'the edges of the score range filter': { state: { minScore: '100' }, want: { minScore: 100 } },
    'bad dates are left out': { state: { expiresAfter: 'soon' }, want: undefined },
  };
  for (const [name, c] of Object.entries(cases)) {
    test(name, () => expect(iocFilterInput({ ...emptyIocTableState, ...c.state })).toEqual(c.want));
  }
});

describe('iocFilterProblems', () => {
  const cases: Record<string, { state: Partial<IocTableState>; want: string[] }> = {
    'nothing to say': { state: { minScore: '0', expiresAfter: '2026-11-01T00:00:00.000Z', expiresBefore: '2026-12-01T00:00:00.000Z' }, want: [] },
    'score above 100': { state: { minScore: '150' }, want: ['minScore'] },
    'score below 0': { state: { minScore: '-1' }, want: ['minScore'] },
    'score not a whole number': { state: { minScore: '7.5' }, want: ['minScore'] },
    'score not a number': { state: { minScore: 'high' }, want: ['minScore'] },
    'a date that is not one': { state: { expiresAfter: 'soon' }, want: ['expiresAfter'] },
    'an empty range': {
      state: { expiresAfter: '2026-12-01T00:00:00.000Z', expiresBefore: '2026-11-01T00:00:00.000Z' },
      want: ['expiresBefore'],
    },
  };
  for (const [name, c] of Object.entries(cases)) {
    test(name, () => expect(Object.keys(iocFilterProblems({ ...emptyIocTableState, ...c.state })).sort()).toEqual(c.want));
  }
  test('the message names the range and the value', () => {
    expect(iocFilterProblems({ ...emptyIocTableState, minScore: '150' }).minScore).toBe(
      'Min score must be a whole number from 0 to 100; 150 is not.',
    );
  });
});

describe('order', () => {
  test('newest first by default, and the default is not written in the address', () => {
    const s = iocStateFromParams(new URLSearchParams(''));
    expect(s.sort).toEqual(defaultIocSort);
    expect(iocOrderInput(s)).toEqual({ field: 'LAST_SEEN', direction: 'DESC' });
    expect(iocStateToParams(s).has('sort')).toBe(false);
  });
  test('another order round-trips through the address', () => {
    const p = iocStateToParams({ ...emptyIocTableState, sort: { field: 'SCORE', direction: 'ASC' } });
    expect(p.get('sort')).toBe('SCORE:ASC');
    expect(iocStateFromParams(p).sort).toEqual({ field: 'SCORE', direction: 'ASC' });
  });
  test.each(['VALUE', 'TYPE', 'SCORE', 'FIRST_SEEN', 'LAST_SEEN', 'EXPIRATION_DATE'] as const)(
    'the API order %s is read back from the address both ways',
    (field) => {
      for (const direction of ['ASC', 'DESC'] as const) {
        const p = new URLSearchParams(`sort=${field}:${direction}`);
        expect(iocStateFromParams(p).sort).toEqual({ field, direction });
        expect(iocOrderInput(iocStateFromParams(p))).toEqual({ field, direction });
      }
    },
  );
  test('an unknown order falls back to the default', () => {
    expect(iocStateFromParams(new URLSearchParams('sort=COLOUR:DESC')).sort).toEqual(defaultIocSort);
  });
});

describe('URL parameters', () => {
  test('round trip', () => {
    const s: IocTableState = {
      search: 'evil',
      types: ['URL', 'SHA256'],
      feedId: '3',
      tag: 'phishing',
      minScore: '50',
      warnings: 'UNFLAGGED',
      expiresAfter: '2026-11-01T00:00:00.000Z',
      expiresBefore: '',
      sort: { field: 'EXPIRATION_DATE', direction: 'ASC' },
    };
    expect(iocStateFromParams(new URLSearchParams(iocStateToParams(s).toString()))).toEqual(s);
  });
  test('unknown types are dropped', () => {
    expect(iocStateFromParams(new URLSearchParams('type=IP&type=EMAIL&type=IP')).types).toEqual(['IP']);
  });
});

describe('scoreLevel', () => {
  const cases: Record<string, [number, string]> = {
    top: [100, 'high'],
    'high edge': [80, 'high'],
    'medium edge': [50, 'medium'],
    'just below medium': [49, 'low'],
    zero: [0, 'low'],
  };
  for (const [name, [score, want]] of Object.entries(cases)) {
    test(name, () => expect(scoreLevel(score)).toBe(want));
  }
});
