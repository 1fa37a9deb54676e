import { describe, expect, it } from 'vitest';
import { allowedPath, homeFor, isRoot, pagesFor } from './roles';

describe('roles', () => {
  const cases: Record<string, { scope: 'ROOT' | 'TENANT'; pages: string[]; home: string; allowed: string[]; refused: string[] }> = {
    root: {
      scope: 'ROOT',
      pages: ['Overview', 'Feeds', 'IoCs', 'Tenants', 'Tenant groups', 'Allowlist', 'Users', 'Audit log', 'Notifications', 'Assets', 'Asset hits'],
      home: '/overview',
      allowed: ['/overview', '/feeds', '/feeds/12', '/groups', '/iocs', '/tenants', '/allowlist', '/users', '/account', '/audit'],
      refused: [],
    },
    tenant: {
      scope: 'TENANT',
      pages: ['Overview', 'IoCs', 'Tenants', 'Notifications', 'Assets', 'Asset hits'],
      home: '/overview',
      allowed: ['/overview', '/iocs', '/tenants', '/feedsx', '/nowhere', '/account', '/notifications', '/assets', '/hits'],
      refused: ['/feeds', '/feeds/12', '/groups', '/groups/3', '/allowlist', '/users', '/audit'],
    },
  };
  for (const [name, c] of Object.entries(cases)) {
    it(`offers a ${name} user only the pages the API lets them use`, () => {
      expect(isRoot(c.scope)).toBe(c.scope === 'ROOT');
      expect(pagesFor(c.scope).map((p) => p.label)).toEqual(c.pages);
      expect(homeFor(c.scope)).toBe(c.home);
      for (const p of c.allowed) expect(allowedPath(c.scope, p), p).toBe(true);
      for (const p of c.refused) expect(allowedPath(c.scope, p), p).toBe(false);
    });
  }
});
