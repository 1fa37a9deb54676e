import { describe, expect, test } from 'vitest';
import { lookupReason, lookupValues, summarise } from './lookup';

describe('lookupValues', () => {
  const cases: Record<string, [string, string[]]> = {
    empty: ['', []],
    'blank lines': ['\n  \n\t\n', []],
    'one per line': ['203.0.113.7\nevil.example.com\r\nhttp://x.example/a?b=1', ['203.0.113.7', 'evil.example.com', 'http://x.example/a?b=1']],
    'commas, semicolons and spaces': ['1.2.3.4, 5.6.7.8;9.9.9.9  a.example', ['1.2.3.4', '5.6.7.8', '9.9.9.9', 'a.example']],
    'repeats dropped, order kept': ['b.example\na.example\nb.example', ['b.example', 'a.example']],
    'case is kept (the server normalises)': ['EVIL.example.com\nevil.example.com', ['EVIL.example.com', 'evil.example.com']],
  };
  for (const [name, [input, want]] of Object.entries(cases)) {
    test(name, () => expect(lookupValues(input)).toEqual(want));
  }
});

describe('summarise', () => {
  test('counts each outcome', () => {
    expect(
      summarise([
        { known: true },
        { known: false },
        { known: false, error: 'not an indicator' },
        { known: true, error: null },
        { known: false, error: '' },
      ]),
    ).toEqual({ known: 2, unknown: 2, invalid: 1 });
  });
});

describe('lookupReason', () => {
  test('drops the lead and the value the row shows', () => {
    expect(lookupReason('invalid indicator: not a valid host name: "not_an_indicator"', 'not_an_indicator')).toBe('not a valid host name');
    expect(lookupReason('invalid indicator: "abc" is not a fully qualified domain name', 'abc')).toBe('is not a fully qualified domain name');
  });
  test('keeps a reason that does not quote the value', () => {
    expect(lookupReason('invalid indicator: empty value', ' ')).toBe('empty value');
  });
});
