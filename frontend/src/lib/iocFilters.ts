import type { IocFilter, IocType } from '../gql/graphql';

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

/** IocTableState is what decides which IoCs the table shows; it lives in the URL. */
export interface IocTableState {
  search: string;
  types: IocType[];
  feedId: string;
  tag: string;
  minScore: string;
  expiresAfter: string;
  expiresBefore: string;
}

export const emptyIocTableState: IocTableState = {
  search: '',
  types: [],
  feedId: '',
  tag: '',
  minScore: '',
  expiresAfter: '',
  expiresBefore: '',
};

/** iocFilterInput builds the API's IocFilter; undefined when nothing filters. */
export function iocFilterInput(s: IocTableState): IocFilter | undefined {
  const f: IocFilter = {};
  if (s.search.trim()) f.search = s.search.trim();
  if (s.types.length) f.type = s.types;
  if (s.feedId) f.feedId = s.feedId;
  if (s.tag.trim()) f.tag = s.tag.trim();
  const score = Number(s.minScore);
  if (s.minScore.trim() !== '' && Number.isInteger(score)) f.minScore = Math.min(100, Math.max(0, score));
  if (s.expiresAfter && !Number.isNaN(Date.parse(s.expiresAfter))) f.expiresAfter = s.expiresAfter;
  if (s.expiresBefore && !Number.isNaN(Date.parse(s.expiresBefore))) f.expiresBefore = s.expiresBefore;
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
  return p;
}

/** iocStateFromParams is the inverse of iocStateToParams; unknown types are dropped. */
export function iocStateFromParams(p: URLSearchParams): IocTableState {
  return {
    search: p.get('q') ?? '',
    types: [...new Set(p.getAll('type'))].filter((t): t is IocType => (iocTypes as readonly string[]).includes(t)),
    feedId: p.get('feed') ?? '',
    tag: p.get('tag') ?? '',
    minScore: p.get('minScore') ?? '',
    expiresAfter: p.get('expiresAfter') ?? '',
    expiresBefore: p.get('expiresBefore') ?? '',
  };
}

/** scoreLevel buckets a 0-100 score for its colour. */
export function scoreLevel(score: number): 'high' | 'medium' | 'low' {
  if (score >= 80) return 'high';
  if (score >= 50) return 'medium';
  return 'low';
}
