import { describe, expect, test } from 'vitest';
import { backlogText, dailyCapText, downloadText, formatBytes, latestBacklog, runningText } from './progress';
import { formatDateTime } from './format';

describe('backlogText', () => {
  const now = new Date('2026-11-25T00:00:00Z');
  const expected = '2026-11-27T00:05:00Z';
  const cases: Record<string, [Parameters<typeof backlogText>[0], string | null]> = {
    'not a constant-rate kind': [{ backlogWritten: 0, backlogTotal: 0, expectedCompletion: null }, null],
    'part written': [
      { backlogWritten: 3000, backlogTotal: 9000, expectedCompletion: expected },
      `3,000 of 9,000 written (33%) · complete ${formatDateTime(expected)} (in 2 days)`,
    ],
    'all written': [{ backlogWritten: 9000, backlogTotal: 9000, expectedCompletion: null }, 'All 9,000 written'],
  };
  for (const [name, [b, want]] of Object.entries(cases)) {
    test(name, () => expect(backlogText(b, now)).toBe(want));
  }
  test('nearly all is not 100%', () =>
    expect(backlogText({ backlogWritten: 9999, backlogTotal: 10000, expectedCompletion: expected }, now)).toContain('9,999 of 10,000 written (99%)'));
});

test('latestBacklog skips runs without progress and the running one', () => {
  const runs = [
    { id: '4', endedAt: null, backlogWritten: 0, backlogTotal: 0 },
    { id: '3', endedAt: '2026-11-25T00:00:00Z', backlogWritten: 0, backlogTotal: 0 },
    { id: '2', endedAt: '2026-11-24T00:00:00Z', backlogWritten: 6, backlogTotal: 9 },
    { id: '1', endedAt: '2026-11-23T00:00:00Z', backlogWritten: 3, backlogTotal: 9 },
  ];
  expect(latestBacklog(runs)?.id).toBe('2');
  expect(latestBacklog([])).toBeNull();
});

describe('downloadText', () => {
  const cases: Record<string, [number | null, number | null, string | null]> = {
    'nothing downloading': [0, null, null],
    'no total': [1536, null, '1.5 KB downloaded'],
    'with a total': [1.5 * 1024 * 1024, 4 * 1024 * 1024, '1.5 MB of 4.0 MB downloaded (37%)'],
    'bytes only': [512, 0, '512 B downloaded'],
  };
  for (const [name, [d, total, want]] of Object.entries(cases)) {
    test(name, () => expect(downloadText(d, total)).toBe(want));
  }
  test('formatBytes', () => expect(formatBytes(3 * 1024 ** 3)).toBe('3.0 GB'));
});

describe('runningText', () => {
  test('before anything', () => expect(runningText(null)).toBe('Starting…'));
  test('downloading', () => expect(runningText({ fetched: 0, stored: 0, downloaded: 2048, downloadTotal: 4096 })).toBe('2.0 KB of 4.0 KB downloaded (50%)'));
  test('records', () => expect(runningText({ fetched: 1200, stored: 1100 })).toBe('1,200 fetched · 1,100 stored'));
  test('records and download', () =>
    expect(runningText({ fetched: 3, stored: 3, downloaded: 512, downloadTotal: null })).toBe('3 fetched · 3 stored · 512 B downloaded'));
});

describe('dailyCapText', () => {
  test('the runner note', () =>
    expect(dailyCapText('daily limit of 25000 IoCs reached; the rest waits until 2026-11-26T00:00:00Z')).toBe(
      '25,000 IoCs today; the rest from 00:00 UTC',
    ));
  test('joined with another note', () =>
    expect(dailyCapText('3 records skipped; daily limit of 10 IoCs reached; the rest waits until 2026-11-26T00:00:00Z')).toBe(
      '10 IoCs today; the rest from 00:00 UTC',
    ));
  test('other notes', () => expect(dailyCapText('limit of 500 IoCs per poll reached; the rest comes with the next poll')).toBeNull());
  test('none', () => expect(dailyCapText('')).toBeNull());
});
