import { needsLine } from '../lib/builtinFeeds';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, useSyncExternalStore } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { FeedQuery, FeedRunProgressSubscription, FeedRunsQuery, FeedStatusOfFeedSubscription } from '../api';
import { EmptyState, ErrorBox, QueryView, Spinner, StatusDot } from '../components/ui';
import type { FeedQuery as FeedResult, FeedRunProgressSubscription as ProgressEvent, FeedRunsQuery as FeedRunsResult } from '../gql/graphql';
import { errorMessage } from '../lib/errors';
import { days, feedTypeLabel, formatDateTime, hours } from '../lib/format';
import { RelativeTime } from '../components/time';
import { request } from '../lib/graphql';
import { backlogText, downloadText, latestBacklog } from '../lib/progress';
import { liveConnection, subscribe } from '../lib/live';
import { EnabledSwitch, FeedIcon, useFeedConfirmations, useFeedMutations } from './feedActions';
import { FeedForm } from './FeedForm';
import { usePremiumKinds } from './PremiumFeedForm';

/** FeedDetailPage shows one feed, its actions and its run history. */
export function FeedDetailPage() {
  const { id = '' } = useParams();
  const navigate = useNavigate();
  const m = useFeedMutations();
  const confirm = useFeedConfirmations(m, () => navigate('/feeds'));
  const [editing, setEditing] = useState(false);
  const premiumKinds = usePremiumKinds();
  const [progress, setProgress] = useState<ProgressEvent['feedRunProgress'] | null>(null);
  const live = useSyncExternalStore(liveConnection.subscribe, liveConnection.get);
  const qc = useQueryClient();
  // Status and run counters arrive over the websocket; poll only while it is down.
  const feed = useQuery({ queryKey: ['feed', id], queryFn: () => request(FeedQuery, { id }), refetchInterval: live ? false : 3000 });
  const runs = useQuery({
    queryKey: ['feedRuns', id],
    queryFn: () => request(FeedRunsQuery, { feedId: id, first: 20 }),
    refetchInterval: live ? false : 3000,
  });
  useEffect(() => {
    const stopStatus = subscribe(FeedStatusOfFeedSubscription, { feedId: id }, (d) => {
      qc.setQueryData<FeedResult>(['feed', id], (old) => (old ? { feed: { ...old.feed, ...d.feedStatusChanged } } : old));
      // A status change may be a run starting or ending: show it in the history.
      void qc.invalidateQueries({ queryKey: ['feedRuns', id] });
    });
    const stopProgress = subscribe(FeedRunProgressSubscription, { feedId: id }, (d) => {
      const p = d.feedRunProgress;
      setProgress(p.done ? null : p);
      if (p.done) {
        void qc.invalidateQueries({ queryKey: ['feedRuns', id] });
        void qc.invalidateQueries({ queryKey: ['feed', id] });
      }
    });
    return () => {
      stopStatus();
      stopProgress();
    };
  }, [id, qc]);

  if (feed.isPending) return <Spinner label="Loading feed…" />;
  if (feed.error) {
    return (
      <section className="page">
        <p>
          <Link to="/feeds">‹ Feeds</Link>
        </p>
        <ErrorBox error={errorMessage(feed.error)} onRetry={() => void feed.refetch()} />
      </section>
    );
  }
  const f = feed.data.feed;
  const kind = f.premiumKind ? premiumKinds.data?.premiumFeedKinds.find((k) => k.kind === f.premiumKind) : undefined;
  // Backfill is a TAXII notion (a TSV file has no past); premium kinds say whether they have it.
  const hasBackfill = f.type === 'PREMIUM' ? !!kind?.backfillDays : f.category !== 'TSV';
  // A run is in progress while the newest run has no end; its counters come
  // live from feedRunProgress, or from the run record until the first event.
  const open = runs.data?.feedRuns[0] && !runs.data.feedRuns[0].endedAt ? runs.data.feedRuns[0] : null;
  const running = progress ?? (open ? { fetched: open.fetched, stored: open.stored, rejected: open.rejected, downloaded: 0, downloadTotal: null } : null);
  const download = running ? downloadText(running.downloaded, running.downloadTotal) : null;
  // Constant-rate kinds: how far the feed is through its lists, as its last run left it.
  const backlogRun = latestBacklog(runs.data?.feedRuns ?? []);
  const backlog = backlogRun ? backlogText(backlogRun) : null;
  return (
    <section className="page" aria-labelledby="feed-title">
      <p className="crumbs">
        <Link to="/feeds">‹ Feeds</Link>
      </p>
      <div className="page-head">
        <div className="title-with-icon">
          <FeedIcon feed={f} />
          <div>
            <h1 id="feed-title">{f.name}</h1>
            <p className="muted">
              {feedTypeLabel(f.type)}
              {f.type === 'CUSTOM' && ` · ${f.category}`}
              {kind && ` · ${kind.title}`} · {f.iocCount.toLocaleString('en-US')} indicators
            </p>
          </div>
        </div>
        <div className="row-actions">
          <span className="inline-label">
            Enabled <EnabledSwitch feed={f} m={m} ask={confirm.ask} />
          </span>
          <button type="button" className="btn btn-primary" disabled={!f.enabled || m.runNow.isPending} onClick={() => m.runNow.mutate(f.id)}>
            Run now
          </button>
          {f.canEdit && (
            <button type="button" className="btn" onClick={() => setEditing(true)}>
              Edit
            </button>
          )}
          {f.canEdit && f.cursor && (
            <button type="button" className="btn" onClick={() => confirm.ask({ kind: 'resetCursor', feed: f })}>
              Reset cursor
            </button>
          )}
          {f.canReset && (
            <button type="button" className="btn" onClick={() => confirm.ask({ kind: 'reset', feed: f })}>
              Reset premium feed
            </button>
          )}
          {f.canDelete && (
            <button type="button" className="btn btn-danger-ghost" onClick={() => confirm.ask({ kind: 'delete', feed: f })}>
              Delete
            </button>
          )}
        </div>
      </div>

      {needsLine(f) && (
        <p className={needsLine(f)?.missing ? 'callout callout-warn' : 'muted'} data-testid="feed-needs">
          {needsLine(f)?.missing ? needsLine(f)?.text : `Needs: ${needsLine(f)?.text}`}
        </p>
      )}
      <dl className="facts card">
        <div>
          <dt>Status</dt>
          <dd data-testid="feed-status">
            <StatusDot status={f.status} />
          </dd>
        </div>
        <div>
          <dt>Status message</dt>
          <dd data-testid="feed-status-message">{f.statusMessage}</dd>
        </div>
        <div>
          <dt>Last ingestion</dt>
          <dd>
            {formatDateTime(f.lastIngestion)} <span className="muted">(<RelativeTime iso={f.lastIngestion} />)</span>
          </dd>
        </div>
        <div>
          <dt>Polling frequency</dt>
          <dd>{hours(f.pollingFrequency)}</dd>
        </div>
        <div>
          <dt>Retention period</dt>
          <dd>{days(f.retentionPeriod)}</dd>
        </div>
        {hasBackfill && (
          <div>
            <dt>Backfill days</dt>
            <dd>{days(f.backfillDays)}</dd>
          </div>
        )}
        {f.collectionUrl && (
          <div className="wide">
            <dt>Collection URL</dt>
            <dd className="mono break">{f.collectionUrl}</dd>
          </div>
        )}
        {f.username && (
          <div>
            <dt>Username</dt>
            <dd>{f.username}</dd>
          </div>
        )}
        <div>
          <dt>Secret</dt>
          <dd>{f.hasPassword ? 'set' : 'not set'}</dd>
        </div>
        {f.description && (
          <div className="wide">
            <dt>Description</dt>
            <dd>{f.description}</dd>
          </div>
        )}
        {backlog && (
          <div className="wide">
            <dt>Backlog</dt>
            <dd data-testid="feed-backlog">{backlog}</dd>
          </div>
        )}
        <div>
          <dt>Resumes from</dt>
          <dd className="mono">{f.cursor || 'the start'}</dd>
        </div>
      </dl>

      {running && (
        <div className="card run-progress" role="status" aria-label="Run in progress">
          <div className="progress-head">
            <strong>Run in progress</strong>
            <span className="muted">
              {running.fetched.toLocaleString('en-US')} fetched · {running.stored.toLocaleString('en-US')} stored · {running.rejected.toLocaleString('en-US')} rejected
            </span>
          </div>
          {download && (
            <p className="muted small" data-testid="run-download">
              {download}
            </p>
          )}
          <div
            className="progress-bar"
            role="progressbar"
            aria-label="Records handled"
            aria-valuemin={0}
            aria-valuemax={running.fetched || undefined}
            aria-valuenow={running.stored + running.rejected}
          >
            <span style={{ width: running.fetched ? `${Math.min(100, ((running.stored + running.rejected) / running.fetched) * 100)}%` : undefined }} className={running.fetched ? '' : 'indeterminate'} />
          </div>
        </div>
      )}

      <h2 className="section-title">Run history</h2>
      <QueryView
        query={runs}
        loading="Loading runs…"
        isEmpty={(d) => d.feedRuns.length === 0}
        empty={
          <EmptyState title="No runs yet.">
            <p className="muted">Use “Run now” to fetch the feed at once.</p>
          </EmptyState>
        }
      >
        {(d) => <RunTable runs={d.feedRuns} />}
      </QueryView>
      {editing && <FeedForm feed={f} onClose={() => setEditing(false)} />}
      {confirm.dialog}
    </section>
  );
}

function RunTable({ runs }: { runs: FeedRunsResult['feedRuns'] }) {
  const [open, setOpen] = useState<string | null>(null);
  // The backlog column is for the kinds written at a constant rate only.
  const paced = runs.some((r) => r.backlogTotal > 0);
  return (
    <div className="table-wrap">
      <table className="data-table" aria-label="Runs">
        <thead>
          <tr>
            <th>Started</th>
            <th>Duration</th>
            <th className="num">Fetched</th>
            <th className="num">Stored</th>
            <th className="num">Rejected</th>
            {paced && <th>Backlog</th>}
            <th>Outcome</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => {
            const failed = !!r.errorKind;
            const running = !r.endedAt;
            const hasDetail = r.rejections.length > 0 || r.errorDetail || r.note;
            return [
              <tr key={r.id} data-run-id={r.id}>
                <td data-label="Started">{formatDateTime(r.startedAt)}</td>
                <td data-label="Duration">{running ? 'running…' : duration(r.startedAt, r.endedAt!)}</td>
                <td data-label="Fetched" className="num">{r.fetched.toLocaleString('en-US')}</td>
                <td data-label="Stored" className="num">{r.stored.toLocaleString('en-US')}</td>
                <td data-label="Rejected" className="num">{r.rejected.toLocaleString('en-US')}</td>
                {paced && (
                  <td data-label="Backlog" className="small" data-testid="run-backlog">
                    {backlogText(r, new Date(r.endedAt ?? Date.now())) ?? '—'}
                  </td>
                )}
                <td data-label="Outcome">
                  <span className={failed ? 'pill pill-error' : running ? 'pill pill-info' : 'pill pill-ok'}>
                    {failed ? r.errorKind : running ? 'Running' : 'Success'}
                  </span>
                  {hasDetail && (
                    <button type="button" className="btn-link small" aria-expanded={open === r.id} onClick={() => setOpen(open === r.id ? null : r.id)}>
                      {open === r.id ? 'Hide details' : 'Details'}
                    </button>
                  )}
                </td>
              </tr>,
              open === r.id && (
                <tr key={`${r.id}-detail`} className="detail-row">
                  <td colSpan={paced ? 7 : 6}>
                    {r.errorDetail && (
                      <p>
                        <strong>Error:</strong> {r.errorDetail}
                      </p>
                    )}
                    {r.note && <p className="muted">{r.note}</p>}
                    {r.rejections.length > 0 && (
                      <>
                        <p>
                          <strong>Rejected records</strong> (first {r.rejections.length} of {r.rejected})
                        </p>
                        <ul className="rejections">
                          {r.rejections.map((x) => (
                            <li key={x.position}>
                              <span className="mono">#{x.position}</span> {x.reason}
                            </li>
                          ))}
                        </ul>
                      </>
                    )}
                  </td>
                </tr>
              ),
            ];
          })}
        </tbody>
      </table>
    </div>
  );
}

function duration(from: string, to: string): string {
  const ms = new Date(to).getTime() - new Date(from).getTime();
  if (!(ms >= 0)) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}
