import { useEffect, useRef, useState } from 'react';
import { FeedRunProgressSubscription } from '../api';
import { StatusDot } from '../components/ui';
import type { FeedRowFragment, FeedRunProgressSubscription as ProgressEvent } from '../gql/graphql';
import { subscribe } from '../lib/live';
import { dailyCapText, runningText } from '../lib/progress';

type Progress = ProgressEvent['feedRunProgress'];

/**
 * useRunProgress follows the runs of every feed over one subscription and
 * returns the latest counters of each run in flight, by feed id. A run's
 * last event (done) removes it and calls onDone.
 */
export function useRunProgress(onDone?: (feedId: string) => void): ReadonlyMap<string, Progress> {
  const [runs, setRuns] = useState<ReadonlyMap<string, Progress>>(new Map());
  const done = useRef(onDone);
  done.current = onDone;
  useEffect(
    () =>
      subscribe(FeedRunProgressSubscription, {}, (d) => {
        const p = d.feedRunProgress;
        setRuns((old) => {
          const next = new Map(old);
          if (p.done) next.delete(p.feedId);
          else next.set(p.feedId, p);
          return next;
        });
        if (p.done) done.current?.(p.feedId);
      }),
    [],
  );
  return runs;
}

/** isRunning: a live run event, or a run record still open. */
export function isRunning(f: FeedRowFragment, progress: Progress | undefined): boolean {
  return !!progress || (f.enabled && !!f.lastRun && !f.lastRun.endedAt);
}

/**
 * FeedRunStatus is the Status cell: Running with the run's progress while a
 * run is in flight, "Not run yet" for an enabled feed that never ran (its
 * message says Initializing: no colour claims success yet), else the
 * derived status.
 */
export function FeedRunStatus({ feed, progress }: { feed: FeedRowFragment; progress: Progress | undefined }) {
  if (isRunning(feed, progress)) {
    return (
      <span className="run-state" data-testid="running">
        <span className="status">
          <span className="dot dot-running" aria-hidden="true" />
          Running
        </span>
        <small className="run-progress" data-testid="run-progress">
          {runningText(progress)}
        </small>
      </span>
    );
  }
  if (feed.enabled && !feed.lastRun) {
    return (
      <span className="status">
        <span className="dot dot-pending" aria-hidden="true" />
        Not run yet
      </span>
    );
  }
  return <StatusDot status={feed.status} />;
}

/** DailyCapNotice shows, on the feed, that its last run stopped at the daily cap. */
export function DailyCapNotice({ feed }: { feed: FeedRowFragment }) {
  const text = dailyCapText(feed.lastRun?.note);
  if (!text) return null;
  return (
    <span className="badge badge-warn" data-testid="daily-cap">
      {text}
    </span>
  );
}
