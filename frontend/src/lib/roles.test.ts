import { describe, expect, it } from 'vitest';
import { allowedPath, homeFor, isRoot, pagesFor } from './roles';

describe('roles', () => {
  const cases: Record<string, { scope: 'ROOT' | 'TENANT'; pages: string[]; home: string; allowed: string[]; refused: string[] }> = {
    root: {
      scope: 'ROOT',
      pages: ['Feeds', 'IoCs', 'Tenants', 'Tenant groups', 'Allowlist'],
      home: '/feeds',
      allowed: ['/feeds', '/feeds/12', '/groups', '/iocs', '/tenants', '/allowlist'],
      refused: [],
    },
    tenant: {
      scope: 'TENANT',
      pages: ['IoCs', 'Tenants'],
      home: '/iocs',
      allowed: ['/iocs', '/tenants', '/feedsx', '/nowhere'],
      refused: ['/feeds', '/feeds/12', '/groups', '/groups/3', '/allowlist'],
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
