import type { IocFilter, IocOrder, IocOrderField, IocType, IocWarnings, OrderDirection } from '../gql/graphql';

/** iocTypes lists the indicator kinds in the order the filter shows them. */
export const iocTypes: readonly IocType[] = ['IP', 'DOMAIN', 'URL', 'MD5', 'SHA1', 'SHA256', 'CERT_SHA1', 'RULE'];

export const iocTypeLabels: Record<IocType, string> = {
  IP: 'IP',
  DOMAIN: 'Domain',
  URL: 'URL',
  MD5: 'MD5',
  SHA1: 'SHA-1',
  SHA256: 'SHA-256',
  CERT_SHA1: 'Certificate SHA-1',
  RULE: 'Rule',
};

/** IocSort is an order of the IoC table, as the API takes it. */
export interface IocSort {
  field: IocOrderField;
  direction: OrderDirection;
}

/** defaultIocSort is the table's order when the address names none: newest sightings first. */
export const defaultIocSort: IocSort = { field: 'LAST_SEEN', direction: 'DESC' };

const iocOrderFields: readonly IocOrderField[] = ['VALUE', 'TYPE', 'SCORE', 'FIRST_SEEN', 'LAST_SEEN', 'EXPIRATION_DATE'];

/** isIocOrderField reports whether s names an order the API offers. */
export function isIocOrderField(s: string): s is IocOrderField {
  return (iocOrderFields as readonly string[]).includes(s);
}

/** IocTableState is what decides which IoCs the table shows, and in what order; it lives in the URL. */
export interface IocTableState {
  search: string;
  types: IocType[];
  feedId: string;
  tag: string;
  minScore: string;
  expiresAfter: string;
  expiresBefore: string;
  /** Flagged or unflagged by a warninglist only; '' for both. */
  warnings: IocWarnings | '';
  sort: IocSort;
}

export const emptyIocTableState: IocTableState = {
  search: '',
  types: [],
  feedId: '',
  tag: '',
  minScore: '',
  expiresAfter: '',
  expiresBefore: '',
  warnings: '',
  sort: defaultIocSort,
};

/** The range of a score, and so of the Min score filter. */
export const minScoreLimit = 0;
export const maxScoreLimit = 100;

/** IocFilterProblems says, per filter field, why its value cannot filter. */
export type IocFilterProblems = Partial<Record<'minScore' | 'expiresAfter' | 'expiresBefore', string>>;

/**
 * iocFilterProblems finds the filter values that are out of range or
 * malformed. They are reported to the user rather than clamped or dropped:
 * a filter silently changed would show a table that does not answer the
 * question asked.
 */
export function iocFilterProblems(s: IocTableState): IocFilterProblems {
  const p: IocFilterProblems = {};
  const raw = s.minScore.trim();
  if (raw !== '') {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < minScoreLimit || n > maxScoreLimit)
      p.minScore = `Min score must be a whole number from ${minScoreLimit} to ${maxScoreLimit}; ${raw} is not.`;
  }
  const after = s.expiresAfter ? Date.parse(s.expiresAfter) : NaN;
  const before = s.expiresBefore ? Date.parse(s.expiresBefore) : NaN;
  if (s.expiresAfter && Number.isNaN(after)) p.expiresAfter = `"${s.expiresAfter}" is not a date and time.`;
  if (s.expiresBefore && Number.isNaN(before)) p.expiresBefore = `"${s.expiresBefore}" is not a date and time.`;
  if (!Number.isNaN(after) && !Number.isNaN(before) && after >= before)
    p.expiresBefore = 'Expires before must be later than Expires after: no indicator can match this range.';
  return p;
}

/** iocOrderInput is the API's IocOrder for the table's sort. */
export function iocOrderInput(s: IocTableState): IocOrder {
  return { field: s.sort.field, direction: s.sort.direction };
}

/**
 * iocFilterInput builds the API's IocFilter; undefined when nothing filters.
 * A value iocFilterProblems reports is left out: the page shows the problem
 * and asks for nothing until it is corrected.
 */
export function iocFilterInput(s: IocTableState): IocFilter | undefined {
  const f: IocFilter = {};
  if (s.search.trim()) f.search = s.search.trim();
  if (s.types.length) f.type = s.types;
  if (s.feedId) f.feedId = s.feedId;
  if (s.tag.trim()) f.tag = s.tag.trim();
  const problems = iocFilterProblems(s);
  if (s.minScore.trim() !== '' && !problems.minScore) f.minScore = Number(s.minScore.trim());
  if (s.expiresAfter && !problems.expiresAfter) f.expiresAfter = s.expiresAfter;
  if (s.expiresBefore && !problems.expiresBefore) f.expiresBefore = s.expiresBefore;
  if (s.warnings) f.warnings = s.warnings;
  return Object.keys(f).length ? f : undefined;
}

/** iocStateToParams writes the state into URL parameters. */
export function iocStateToParams(s: IocTableState): URLSearchParams {
  const p = new URLSearchParams();
  if (s.search) p.set('q', s.search);
  for (const t of s.types) p.append('type', t);
  if (s.feedId) p.set('feed', s.feedId);
  if (s.tag) p.set('tag', s.tag);
  if (s.minScore) p.set('minScore', s.minScore);
  if (s.expiresAfter) p.set('expiresAfter', s.expiresAfter);
  if (s.expiresBefore) p.set('expiresBefore', s.expiresBefore);
  if (s.warnings) p.set('warnings', s.warnings);
  if (s.sort.field !== defaultIocSort.field || s.sort.direction !== defaultIocSort.direction)
    p.set('sort', `${s.sort.field}:${s.sort.direction}`);
  return p;
}

/** iocStateFromParams is the inverse of iocStateToParams; unknown types and orders are dropped. */
export function iocStateFromParams(p: URLSearchParams): IocTableState {
  const [field, dir] = (p.get('sort') ?? '').split(':');
  const sort: IocSort = isIocOrderField(field) ? { field, direction: dir === 'DESC' ? 'DESC' : 'ASC' } : defaultIocSort;
  return {
    sort,
    search: p.get('q') ?? '',
    types: [...new Set(p.getAll('type'))].filter((t): t is IocType => (iocTypes as readonly string[]).includes(t)),
    feedId: p.get('feed') ?? '',
    tag: p.get('tag') ?? '',
    minScore: p.get('minScore') ?? '',
    expiresAfter: p.get('expiresAfter') ?? '',
    expiresBefore: p.get('expiresBefore') ?? '',
    warnings: p.get('warnings') === 'FLAGGED' || p.get('warnings') === 'UNFLAGGED' ? (p.get('warnings') as IocWarnings) : '',
  };
}

/** scoreLevel buckets a 0-100 score for its colour. */
export function scoreLevel(score: number): 'high' | 'medium' | 'low' {
  if (score >= 80) return 'high';
  if (score >= 50) return 'medium';
  return 'low';
}
