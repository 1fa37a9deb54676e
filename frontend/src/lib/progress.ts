import { formatDateTime, formatRelative } from './format';

/** The progress a run of a constant-rate kind (RISK_LIST) records. */
export interface Backlog {
  backlogWritten: number;
  backlogTotal: number;
  expectedCompletion?: string | null;
}

/**
 * backlogText says how far a constant-rate feed is through its lists after a
 * run: "3,000 of 9,000 written (33%) · complete 2026-11-27 00:05 (in 2 days)",
 * "All 9,000 written"; null for the kinds that record none (total 0).
 */
export function backlogText(b: Backlog, now: Date = new Date()): string | null {
  if (!(b.backlogTotal > 0)) return null;
  const total = b.backlogTotal.toLocaleString('en-US');
  if (b.backlogWritten >= b.backlogTotal && !b.expectedCompletion) return `All ${total} written`;
  // Rounded down: 100% only once everything is.
  const pct = Math.min(99, Math.floor((b.backlogWritten * 100) / b.backlogTotal));
  let text = `${b.backlogWritten.toLocaleString('en-US')} of ${total} written (${pct}%)`;
  if (b.expectedCompletion) {
    text += ` · complete ${formatDateTime(b.expectedCompletion)} (${formatRelative(b.expectedCompletion, now)})`;
  }
  return text;
}

/** latestBacklog is the progress of the newest run that recorded one, or null. */
export function latestBacklog<T extends Backlog & { endedAt?: string | null }>(runs: readonly T[]): T | null {
  return runs.find((r) => r.endedAt && r.backlogTotal > 0) ?? null;
}

/** formatBytes shows a byte count in binary units: "512 B", "1.5 MB". */
export function formatBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

/**
 * downloadText says how far a run's download is: "1.5 MB of 4.0 MB
 * downloaded (37%)", or without a total when the server gave none; null
 * when nothing is being downloaded.
 */
export function downloadText(downloaded: number | null | undefined, total: number | null | undefined): string | null {
  if (!downloaded || downloaded <= 0) return null;
  if (total && total > 0) {
    const pct = Math.min(100, Math.floor((downloaded * 100) / total));
    return `${formatBytes(downloaded)} of ${formatBytes(total)} downloaded (${pct}%)`;
  }
  return `${formatBytes(downloaded)} downloaded`;
}

/** The counters a run in flight reports (feedRunProgress). */
export interface RunCounters {
  fetched: number;
  stored: number;
  downloaded?: number | null;
  downloadTotal?: number | null;
}

/**
 * runningText says where a run in flight is, in one line for a table cell:
 * the download while bytes come in and nothing is parsed yet, else the
 * records ("120 fetched · 118 stored"), with the download when known.
 */
export function runningText(p: RunCounters | null | undefined): string {
  if (!p) return 'Starting…';
  const download = downloadText(p.downloaded, p.downloadTotal);
  if (p.fetched === 0) return download ?? 'Starting…';
  const records = `${p.fetched.toLocaleString('en-US')} fetched · ${p.stored.toLocaleString('en-US')} stored`;
  return download ? `${records} · ${download}` : records;
}

const dailyCapNote = /daily limit of (\d+) IoCs reached; the rest waits until (\S+)/;

/**
 * dailyCapText turns the note of a run that reached a tenant's daily cap
 * into the notice the feed shows: "25,000 IoCs today; the rest from 00:00
 * UTC"; null for any other note. The resume time is shown in UTC, the zone
 * the cap is counted in.
 */
export function dailyCapText(note: string | null | undefined): string | null {
  const m = note ? dailyCapNote.exec(note) : null;
  if (!m) return null;
  const at = new Date(m[2]);
  if (Number.isNaN(at.getTime())) return null;
  const hhmm = `${String(at.getUTCHours()).padStart(2, '0')}:${String(at.getUTCMinutes()).padStart(2, '0')}`;
  return `${Number(m[1]).toLocaleString('en-US')} IoCs today; the rest from ${hhmm} UTC`;
}
