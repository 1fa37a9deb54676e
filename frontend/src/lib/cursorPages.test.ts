import { describe, expect, test } from 'vitest';
import { afterCursor, firstPage, nextPage, pagesFor, prevPage, resized, type CursorPages } from './cursorPages';

/** walk applies moves to the first page of key "q" at 25 rows. */
function walk(...moves: ((s: CursorPages) => CursorPages)[]): CursorPages {
  return moves.reduce((s, m) => m(s), firstPage('q', 25));
}

const next = (c: string | null | undefined) => (s: CursorPages) => nextPage(s, c);

describe('cursor pages', () => {
  const cases: Record<string, { got: CursorPages; cursors: (string | null)[]; after: string | undefined; pageSize: number }> = {
    'first page asks without a cursor': { got: walk(), cursors: [null], after: undefined, pageSize: 25 },
    'next asks after the end cursor of the page shown': { got: walk(next('c1'), next('c2')), cursors: [null, 'c1', 'c2'], after: 'c2', pageSize: 25 },
    'previous goes back one page': { got: walk(next('c1'), next('c2'), prevPage), cursors: [null, 'c1'], after: 'c1', pageSize: 25 },
    'previous on the first page stays there': { got: walk(prevPage, prevPage), cursors: [null], after: undefined, pageSize: 25 },
    'next without an end cursor stays': { got: walk(next('c1'), next(null), next(undefined)), cursors: [null, 'c1'], after: 'c1', pageSize: 25 },
    'another page size starts again at the first page': { got: walk(next('c1'), (s) => resized(s, 100)), cursors: [null], after: undefined, pageSize: 100 },
    'another search starts again at the first page, keeping the size': {
      got: walk((s) => resized(s, 50), next('c1'), (s) => pagesFor(s, 'other')),
      cursors: [null],
      after: undefined,
      pageSize: 50,
    },
    'the same search keeps its page': { got: walk(next('c1'), (s) => pagesFor(s, 'q')), cursors: [null, 'c1'], after: 'c1', pageSize: 25 },
  };
  for (const [name, c] of Object.entries(cases)) {
    test(name, () => {
      expect(c.got.cursors).toEqual(c.cursors);
      expect(afterCursor(c.got)).toBe(c.after);
      expect(c.got.pageSize).toBe(c.pageSize);
    });
  }

  test('an unchanged search returns the same state, so the hook does not re-render', () => {
    const s = walk(next('c1'));
    expect(pagesFor(s, 'q')).toBe(s);
    expect(pagesFor(s, 'other')).not.toBe(s);
  });

  test('going back to an earlier search does not bring its old pages back', () => {
    const s = walk(next('c1'), next('c2'));
    const back = pagesFor(pagesFor(s, 'other'), 'q');
    expect(back.cursors).toEqual([null]);
  });
});
