import { describe, expect, test } from 'vitest';
import { emptyIocTableState, iocFilterInput, iocStateFromParams, iocStateToParams, scoreLevel, type IocTableState } from './iocFilters';

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
    'score is clamped to 0..100': { state: { minScore: '150' }, want: { minScore: 100 } },
    'a non-integer score is ignored': { state: { minScore: '7.5' }, want: undefined },
    'bad dates are ignored': { state: { expiresAfter: 'soon' }, want: undefined },
  };
  for (const [name, c] of Object.entries(cases)) {
    test(name, () => expect(iocFilterInput({ ...emptyIocTableState, ...c.state })).toEqual(c.want));
  }
});

describe('URL parameters', () => {
  test('round trip', () => {
    const s: IocTableState = {
      search: 'evil',
      types: ['URL', 'SHA256'],
      feedId: '3',
      tag: 'phishing',
      minScore: '50',
      expiresAfter: '2026-11-01T00:00:00.000Z',
      expiresBefore: '',
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
