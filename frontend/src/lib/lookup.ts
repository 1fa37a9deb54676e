/** maxLookupValues is the API's limit on one lookupIocs call. */
export const maxLookupValues = 10_000;

/**
 * lookupValues splits pasted text into the values to look up: one per line,
 * or separated by commas, semicolons or whitespace (URLs hold none of them
 * unescaped); blanks and repeats are dropped, first occurrence kept.
 */
export function lookupValues(text: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of text.split(/[\s,;]+/)) {
    const v = raw.trim();
    if (!v || seen.has(v)) continue;
    seen.add(v);
    out.push(v);
  }
  return out;
}

/** LookupSummary counts the outcomes of one lookup. */
export interface LookupSummary {
  known: number;
  unknown: number;
  invalid: number;
}

/** summarise counts known, unknown-but-valid and invalid values. */
export function summarise(results: readonly { known: boolean; error?: string | null }[]): LookupSummary {
  const s: LookupSummary = { known: 0, unknown: 0, invalid: 0 };
  for (const r of results) {
    if (r.known) s.known++;
    else if (r.error) s.invalid++;
    else s.unknown++;
  }
  return s;
}

/**
 * lookupReason is why a value is not an indicator, without what its row
 * shows already: the server's "invalid indicator: " lead (the row says "Not
 * an indicator") and the value itself, quoted ("not a valid host name:
 * \"x\"" -> "not a valid host name"; "\"x\" is not a fully qualified
 * domain name" -> "is not a fully qualified domain name").
 */
export function lookupReason(error: string, input: string): string {
  let reason = error.replace(/^invalid indicator:\s*/i, '');
  const quoted = JSON.stringify(input.trim());
  reason = reason.replace(`: ${quoted}`, '').replace(`${quoted} `, '').trim();
  return reason || 'not an indicator';
}
