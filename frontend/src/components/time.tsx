import { useEffect, useState } from 'react';
import { formatDateTime, formatRelative } from '../lib/format';

/**
 * useNow is the current time, renewed every `every` ms while the component
 * is mounted, so that relative times ("just now", "5 min ago") move on
 * without a refetch.
 */
export function useNow(every = 30_000): Date {
  const [now, setNow] = useState(() => new Date());
  useEffect(() => {
    const id = setInterval(() => setNow(new Date()), every);
    return () => clearInterval(id);
  }, [every]);
  return now;
}

/**
 * TimeCell shows a time with its zone and, below, how long ago (or until)
 * it is, kept current by useNow; `empty` stands for an absent time.
 */
export function TimeCell({ iso, empty = '—' }: { iso: string | null | undefined; empty?: string }) {
  const now = useNow();
  if (!iso) return <span className="muted">{empty}</span>;
  return (
    <time dateTime={iso} className="time-cell">
      {formatDateTime(iso)}
      <small className="muted" data-testid="relative-time">
        {formatRelative(iso, now)}
      </small>
    </time>
  );
}

/** RelativeTime is formatRelative kept current, for a time shown in full nearby. */
export function RelativeTime({ iso }: { iso: string | null | undefined }) {
  const now = useNow();
  return <>{formatRelative(iso, now)}</>;
}
