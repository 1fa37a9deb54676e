import { describe, expect, test } from 'vitest';
import { days, feedStatusLabel, feedTypeLabel, formatDateTime, formatRelative, fromDateTimeLocal, hours, plural, toDateTimeLocal, zoneName, enumWords } from './format';

describe('formatRelative', () => {
  const now = new Date('2026-11-21T12:00:00Z');
  const cases: Record<string, [string | null, string]> = {
    never: [null, 'never'],
    'just now': ['2026-11-21T11:59:30Z', 'just now'],
    minutes: ['2026-11-21T11:55:00Z', '5 min ago'],
    hours: ['2026-11-21T09:00:00Z', '3 h ago'],
    'one day': ['2026-11-20T11:00:00Z', '1 day ago'],
    'days ahead': ['2026-11-24T12:00:00Z', 'in 3 days'],
    'not a date': ['soon', 'soon'],
  };
  for (const [name, [iso, want]] of Object.entries(cases)) {
    test(name, () => expect(formatRelative(iso, now)).toBe(want));
  }
});

describe('datetime-local conversion', () => {
  test('round trip through local time', () => {
    const iso = '2026-11-21T10:30:00.000Z';
    expect(fromDateTimeLocal(toDateTimeLocal(iso))).toBe(iso);
  });
  test('empty and invalid', () => {
    expect(toDateTimeLocal(null)).toBe('');
    expect(toDateTimeLocal('garbage')).toBe('');
    expect(fromDateTimeLocal('')).toBeUndefined();
    expect(fromDateTimeLocal('2026-13-45T99:99')).toBeUndefined();
  });
  test('formatDateTime agrees with the input value', () => {
    const iso = '2026-03-04T05:06:00Z';
    expect(formatDateTime(iso)).toBe(`${toDateTimeLocal(iso).replace('T', ' ')} ${zoneName(new Date(iso))}`);
    expect(zoneName(new Date(iso))).not.toBe('');
    expect(formatDateTime(undefined)).toBe('—');
  });
});

describe('labels', () => {
  test('spec names of feed types and statuses', () => {
    expect(feedTypeLabel('BUILTIN')).toBe('Built-in');
    expect(feedTypeLabel('CUSTOM')).toBe('Custom');
    expect(feedTypeLabel('PREMIUM')).toBe('Premium');
    expect(feedStatusLabel('SUCCESS')).toBe('Success');
    expect(feedStatusLabel('ERROR')).toBe('Error');
    expect(feedStatusLabel('DISABLED')).toBe('Disabled');
  });
  test('units', () => {
    expect(hours(1)).toBe('1 hour');
    expect(hours(24)).toBe('24 hours');
    expect(days(30)).toBe('30 days');
    expect(plural(1, 'feed')).toBe('1 feed');
    expect(plural(1200, 'indicator')).toBe('1,200 indicators');
  });
});

describe('enumWords', () => {
  test('known values as the forms name them', () => {
    expect(enumWords('system_default')).toBe('System default');
    expect(enumWords('sso_saml')).toBe('SSO (SAML)');
  });
  test('others as words', () => {
    expect(enumWords('RISK_LIST')).toBe('Risk list');
    expect(enumWords('plain')).toBe('Plain');
  });
});
