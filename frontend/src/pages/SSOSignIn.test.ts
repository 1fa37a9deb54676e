import { describe, expect, it } from 'vitest';
import { ssoLoginPath } from './SSOSignIn';

describe('ssoLoginPath', () => {
  it('is the tenant’s SAML login route', () => {
    expect(ssoLoginPath('  4f1c2a  ')).toBe('/saml/4f1c2a/login');
  });
  it('keeps what the person typed inside one path segment', () => {
    expect(ssoLoginPath('../api/x?y#z')).toBe('/saml/..%2Fapi%2Fx%3Fy%23z/login');
  });
});
