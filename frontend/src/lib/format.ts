import type { FeedStatus, FeedType } from '../gql/graphql';

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * formatDateTime shows an RFC 3339 time in local time with its zone, as
 * "YYYY-MM-DD HH:MM UTC" (or "GMT+1", the browser's short name); "—" when
 * absent. The zone is named so that a time read aloud or pasted into a
 * ticket means one instant.
 */
export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())} ${zoneName(d)}`;
}

const zoneFormat = new Intl.DateTimeFormat('en-US', { timeZoneName: 'short' });

/** zoneName is the browser's short name of its zone at d ("UTC", "GMT+1", "PST"). */
export function zoneName(d: Date): string {
  return zoneFormat.formatToParts(d).find((p) => p.type === 'timeZoneName')?.value ?? '';
}

/** formatRelative says how long ago (or until) a time is, coarsely: "5 min ago", "in 3 days". */
export function formatRelative(iso: string | null | undefined, now: Date = new Date()): string {
  if (!iso) return 'never';
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return iso;
  const diff = t - now.getTime();
  const abs = Math.abs(diff);
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3_600_000, 'h'],
    [60_000, 'min'],
  ];
  for (const [ms, unit] of units) {
    if (abs >= ms) {
      const n = Math.floor(abs / ms);
      const label = unit === 'day' ? (n === 1 ? 'day' : 'days') : unit;
      return diff < 0 ? `${n} ${label} ago` : `in ${n} ${label}`;
    }
  }
  return diff < 0 ? 'just now' : 'in a moment';
}

/** toDateTimeLocal turns an RFC 3339 time into the value of an <input type="datetime-local">. */
export function toDateTimeLocal(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** fromDateTimeLocal turns a datetime-local value (local time) into RFC 3339 UTC; undefined when empty or invalid. */
export function fromDateTimeLocal(value: string): string | undefined {
  if (!value) return undefined;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return undefined;
  return d.toISOString();
}

const typeLabels: Record<FeedType, string> = { BUILTIN: 'Built-in', CUSTOM: 'Custom', PREMIUM: 'Premium' };

/** feedTypeLabel is the spec's name of a feed type. */
export function feedTypeLabel(t: FeedType | string): string {
  return typeLabels[t as FeedType] ?? t;
}

const statusLabels: Record<FeedStatus, string> = { SUCCESS: 'Success', ERROR: 'Error', DISABLED: 'Disabled' };

/** feedStatusLabel is the spec's name of a feed status (its colour is in CSS). */
export function feedStatusLabel(s: FeedStatus | string): string {
  return statusLabels[s as FeedStatus] ?? s;
}

/** plural says "1 feed", "3 feeds". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/** hours and days render the table's numeric columns with their unit. */
export const hours = (n: number) => (n === 1 ? '1 hour' : `${n} hours`);
export const days = (n: number) => (n === 1 ? '1 day' : `${n} days`);

/** Words for the stored values the API returns as identifiers. */
const valueWords: Record<string, string> = {
  system_default: 'System default',
  sso_saml: 'SSO (SAML)',
};

/**
 * enumWords shows an identifier-like value as words: the known ones as the
 * forms name them ("sso_saml" -> "SSO (SAML)"), others with their
 * underscores as spaces and a capital ("risk_list" -> "Risk list").
 */
export function enumWords(value: string): string {
  if (valueWords[value]) return valueWords[value];
  const words = value.replace(/_/g, ' ').toLowerCase().trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}
