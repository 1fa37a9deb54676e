import { useState } from 'react';

/**
 * CursorPages is cursor paging as a stack: the after-cursor of every page up
 * to the shown one (null for the first), for one search (key) and page size.
 * The API pages forward only, so going back pops the stack.
 */
export interface CursorPages {
  key: string;
  pageSize: number;
  cursors: readonly (string | null)[];
}

/** firstPage is the first page of key's results. */
export function firstPage(key: string, pageSize: number): CursorPages {
  return { key, pageSize, cursors: [null] };
}

/**
 * pagesFor is s when it still pages key's results, else the first page:
 * any change of what is shown starts again from the first page.
 */
export function pagesFor(s: CursorPages, key: string): CursorPages {
  return s.key === key ? s : firstPage(key, s.pageSize);
}

/** nextPage pushes the shown page's end cursor; without one there is no next page. */
export function nextPage(s: CursorPages, endCursor: string | null | undefined): CursorPages {
  return endCursor == null ? s : { ...s, cursors: [...s.cursors, endCursor] };
}

/** prevPage pops back to the page before; the first page stays. */
export function prevPage(s: CursorPages): CursorPages {
  return s.cursors.length > 1 ? { ...s, cursors: s.cursors.slice(0, -1) } : s;
}

/** resized is the first page at another page size. */
export function resized(s: CursorPages, pageSize: number): CursorPages {
  return firstPage(s.key, pageSize);
}

/** afterCursor is the cursor to ask the shown page with (undefined for the first). */
export function afterCursor(s: CursorPages): string | undefined {
  return s.cursors[s.cursors.length - 1] ?? undefined;
}

/** CursorPaging is what useCursorPages gives a table: its query arguments and the pager's moves. */
export interface CursorPaging {
  /** first and after are the connection's arguments for the shown page. */
  first: number;
  after: string | undefined;
  pageIndex: number;
  pageSize: number;
  setPageSize: (n: number) => void;
  prev: () => void;
  next: (endCursor: string | null | undefined) => void;
}

/**
 * useCursorPages keeps a table's cursor stack; resetKey names what is shown
 * (search, filters, order) and a new one goes back to the first page.
 */
export function useCursorPages(resetKey: string, initialPageSize: number): CursorPaging {
  const [stored, setStored] = useState(() => firstPage(resetKey, initialPageSize));
  // Reset while rendering, not in an effect: a page of the old search is never asked for with the new one.
  const s = pagesFor(stored, resetKey);
  if (s !== stored) setStored(s);
  return {
    first: s.pageSize,
    after: afterCursor(s),
    pageIndex: s.cursors.length - 1,
    pageSize: s.pageSize,
    setPageSize: (n) => setStored((cur) => resized(pagesFor(cur, resetKey), n)),
    prev: () => setStored((cur) => prevPage(pagesFor(cur, resetKey))),
    next: (endCursor) => setStored((cur) => nextPage(pagesFor(cur, resetKey), endCursor)),
  };
}
