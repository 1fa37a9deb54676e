import type { Scope } from '../gql/graphql';

/** NavPage is a page of the main navigation. */
export interface NavPage {
  path: string;
  label: string;
  /** rootOnly pages answer FORBIDDEN to anyone else, so they are not offered to them. */
  rootOnly: boolean;
}

/** navPages lists the main navigation in its order. */
export const navPages: readonly NavPage[] = [
  { path: '/overview', label: 'Overview', rootOnly: false },
  { path: '/feeds', label: 'Feeds', rootOnly: true },
  { path: '/iocs', label: 'IoCs', rootOnly: false },
  { path: '/tenants', label: 'Tenants', rootOnly: false },
  { path: '/groups', label: 'Tenant groups', rootOnly: true },
  { path: '/allowlist', label: 'Allowlist', rootOnly: true },
  { path: '/users', label: 'Users', rootOnly: true },
  { path: '/audit', label: 'Audit log', rootOnly: true },
  { path: '/notifications', label: 'Notifications', rootOnly: false },
  { path: '/assets', label: 'Assets', rootOnly: false },
  { path: '/hits', label: 'Asset hits', rootOnly: false },
];

/** isRoot says whether the scope may manage feeds, tenants and groups (the API's @hasScope(ROOT)). */
export function isRoot(scope: Scope | undefined): boolean {
  return scope === 'ROOT';
}

/** pagesFor is the navigation a user of scope sees: only the pages the API lets them use. */
export function pagesFor(scope: Scope | undefined): NavPage[] {
  return navPages.filter((p) => !p.rootOnly || isRoot(scope));
}

/** homeFor is where a user of scope lands: the first page they may use. */
export function homeFor(scope: Scope | undefined): string {
  return pagesFor(scope)[0]?.path ?? '/overview';
}

/**
 * allowedPath says whether a user of scope may open path (a pathname): a
 * root-only page, or anything under it, is not theirs.
 */
export function allowedPath(scope: Scope | undefined, path: string): boolean {
  if (isRoot(scope)) return true;
  return !navPages.some((p) => p.rootOnly && (path === p.path || path.startsWith(`${p.path}/`)));
}
