import { describe, expect, test } from 'vitest';
import type { IocType } from '../gql/graphql';
import { defang } from './defang';

describe('defang', () => {
  const cases: Record<string, [IocType, string, string | null]> = {
    domain: ['DOMAIN', 'evil.example.com', 'evil[.]example[.]com'],
    'IPv4 address': ['IP', '203.0.113.7', '203[.]0[.]113[.]7'],
    'IPv6 address': ['IP', '2001:db8::1', '2001[:]db8[:][:]1'],
    'http URL, path untouched': ['URL', 'http://malware.example.net/payload.exe', 'hxxp://malware[.]example[.]net/payload.exe'],
    'https URL with port and query': ['URL', 'https://a.example:8443/x?y=1.2', 'hxxps://a[.]example:8443/x?y=1.2'],
    'ftp URL': ['URL', 'ftp://files.example.org/a', 'fxp://files[.]example[.]org/a'],
    'a hash has nothing to defang': ['SHA256', 'a'.repeat(64), null],
    'a rule has nothing to defang': ['RULE', 'alert tcp any any -> any any (sid:1;)', null],
  };
  for (const [name, [type, value, want]] of Object.entries(cases)) {
    test(name, () => expect(defang(type, value)).toBe(want));
  }
});
