import { describe, expect, test } from 'vitest';
import { builtinGlyph, needsLine } from './builtinFeeds';

describe('builtinGlyph', () => {
  const cases: Record<string, [string | null, string]> = {
    known: ['fish', '🎣'],
    unknown: ['nonesuch', '●'],
    none: [null, '●'],
  };
  for (const [name, [icon, want]] of Object.entries(cases)) {
    test(name, () => expect(builtinGlyph(icon)).toBe(want));
  }
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
