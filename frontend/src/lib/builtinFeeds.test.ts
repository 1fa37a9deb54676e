import { describe, expect, test } from 'vitest';
import { builtinIconPath, builtinIconPaths, needsLine } from './builtinFeeds';

describe('builtinIconPath', () => {
  test('every icon the server names has its own drawing', () => {
    const names = ['exchange', 'landmark', 'gauge', 'shield', 'database', 'certificate', 'fish', 'radar'];
    const paths = names.map((n) => builtinIconPath(n));
    expect(new Set(paths).size).toBe(names.length);
    for (const p of paths) expect(p).toMatch(/^M[\d.]/);
  });
  test('an unknown or missing name gets the neutral ring', () => {
    expect(builtinIconPath('nonesuch')).toBe(builtinIconPath(null));
    expect(builtinIconPaths.nonesuch).toBeUndefined();
  });
});

describe('needsLine', () => {
  const cases: Record<string, [{ needs?: string | null; missingSetting?: string | null }, ReturnType<typeof needsLine>]> = {
    'missing key': [
      { needs: 'A key: set --otx-api-key (TIFEEDS_OTX_API_KEY).', missingSetting: '--otx-api-key (TIFEEDS_OTX_API_KEY)' },
      { text: 'Missing key: set --otx-api-key (TIFEEDS_OTX_API_KEY) on the server, then restart it.', missing: true },
    ],
    'nothing missing': [{ needs: 'Nothing: the service is public.', missingSetting: null }, { text: 'Nothing: the service is public.', missing: false }],
    'not built-in': [{ needs: null, missingSetting: null }, null],
  };
  for (const [name, [feed, want]] of Object.entries(cases)) {
    test(name, () => expect(needsLine(feed)).toEqual(want));
  }
});
