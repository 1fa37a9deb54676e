import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { OverviewFeedsQuery, OverviewQuery } from '../api';
import { useAuth } from '../auth';
import { BarList, ChartCard, DayBars, formatCount } from '../components/charts';
import { Page, QueryView } from '../components/ui';
import type { OverviewFeedsQuery as OverviewFeedsData, OverviewQuery as OverviewData } from '../gql/graphql';
import { formatDateTime, formatRelative } from '../lib/format';
import { iocTypeLabels } from '../lib/iocFilters';
import { request } from '../lib/graphql';
import { isRoot } from '../lib/roles';

/** The figures are cached by the server for up to a minute; asking more often shows nothing new. */
const refreshMs = 60_000;

/** OverviewPage is everyone's start page: the state of the indicators and, for root users, of the feeds. */
export function OverviewPage() {
  const { user } = useAuth();
  const root = isRoot(user?.scope);
  const q = useQuery({ queryKey: ['overview'], queryFn: () => request(OverviewQuery), refetchInterval: refreshMs });
  return (
    <Page id="overview" title="Overview" description="The indicators held, what the feeds brought in and what expires, at a glance.">
      <QueryView query={q} loading="Counting indicators…" isEmpty={() => false} empty={null}>
        {(d) => <Figures o={d.overview} root={root} />}
      </QueryView>
      {root && <FeedHealth />}
    </Page>
  );
}

type Figures = OverviewData['overview'];

const utcDay = (iso: string) => iso.slice(0, 10);
const iocsPage = (params: Record<string, string>) => `/iocs?${new URLSearchParams(params)}`;

function Figures({ o, root }: { o: Figures; root: boolean }) {
  const now = new Date();
  const in7days = new Date(now.getTime() + 7 * 86_400_000);
  const expiringTotal = o.expiring.reduce((a, d) => a + d.count, 0);
  const expiringTo = iocsPage({ expiresAfter: now.toISOString(), expiresBefore: in7days.toISOString(), sort: 'EXPIRATION_DATE:ASC' });
  return (
    <>
      <dl className="stat-cards">
        <div className="card stat">
          <dt>Indicators</dt>
          <dd>
            <Link to="/iocs" data-testid="stat-iocs">
              {formatCount(o.iocCount)}
            </Link>
          </dd>
        </div>
        <div className="card stat">
          <dt>Expiring in the next 7 days</dt>
          <dd>
            <Link to={expiringTo} data-testid="stat-expiring">
              {formatCount(expiringTotal)}
            </Link>
          </dd>
        </div>
        <div className="card stat">
          <dt>Added in the last 30 days</dt>
          <dd data-testid="stat-added">{formatCount(o.days.reduce((a, d) => a + d.added, 0))}</dd>
        </div>
        <div className="card stat">
          <dt>Expired in the last 30 days</dt>
          <dd data-testid="stat-expired">{formatCount(o.days.reduce((a, d) => a + d.expired, 0))}</dd>
        </div>
      </dl>
      <div className="chart-grid">
        <ChartCard id="by-type" title="Indicators by type">
          <BarList
            title="Indicators by type"
            unit="Indicators"
            empty="No indicators yet."
            data={o.byType.map((t) => ({ key: t.type, label: iocTypeLabels[t.type], value: t.count, to: iocsPage({ type: t.type }) }))}
          />
        </ChartCard>
        <ChartCard id="by-feed" title="Indicators by feed">
          <BarList
            title="Indicators by feed"
            unit="Indicators"
            empty="No feed has brought indicators yet."
            // The IoCs page offers a tenant user no feed filter (feeds are root-only): one set by a link could not be seen or cleared.
            data={o.byFeed.map((f) => ({ key: f.feed.id, label: f.feed.name, value: f.count, to: root ? iocsPage({ feed: f.feed.id }) : undefined }))}
          />
        </ChartCard>
        <ChartCard id="top-tags" title="Top tags and malware families" description="The feeds store malware families, actors and threat types as tags.">
          <BarList
            title="Top tags and malware families"
            unit="Indicators"
            empty="No tagged indicators yet."
            data={o.topTags.map((t) => ({ key: t.tag, label: t.tag, value: t.count, to: iocsPage({ tag: t.tag }) }))}
          />
        </ChartCard>
        <ChartCard
          id="per-day"
          wide
          title="Added and expired per day"
          description="The last 30 days (UTC): sightings the runs added that were new to their feed, and indicators removed on expiry."
        >
          <DayBars
            title="Added and expired per day"
            days={o.days.map((d) => ({ key: d.day, label: utcDay(d.day), short: utcDay(d.day).slice(5) }))}
            series={[
              { name: 'Added', values: o.days.map((d) => d.added) },
              { name: 'Expired', values: o.days.map((d) => d.expired) },
            ]}
          />
        </ChartCard>
        <ChartCard id="expiring" title="Expiring in the next 7 days" description="Indicators whose expiry falls on each day (UTC), unless a feed reports them again.">
          <DayBars
            title="Expiring in the next 7 days"
            days={o.expiring.map((d, i) => {
              const start = i === 0 ? now : new Date(d.day);
              const end = new Date(new Date(d.day).getTime() + 86_400_000);
              return {
                key: d.day,
                label: utcDay(d.day),
                short: utcDay(d.day).slice(5),
                to: iocsPage({ expiresAfter: start.toISOString(), expiresBefore: end.toISOString(), sort: 'EXPIRATION_DATE:ASC' }),
              };
            })}
            series={[{ name: 'Expiring', values: o.expiring.map((d) => d.count) }]}
          />
        </ChartCard>
      </div>
      <p className="muted small">Counted {formatRelative(o.computedAt)} ({formatDateTime(o.computedAt)}).</p>
    </>
  );
}

type FeedHealthRow = OverviewFeedsData['overview']['feeds'][number];

/** feedState names where a feed stands, the order the health table lists them in. */
function feedState(h: FeedHealthRow): { order: number; label: string; pill: string } {
  if (h.running) return { order: 0, label: 'Running', pill: 'pill-info' };
  if (!h.feed.enabled) return { order: 3, label: 'Disabled', pill: '' };
  if (h.feed.status === 'ERROR') return { order: 1, label: 'Failed', pill: 'pill-error' };
  return { order: 2, label: 'OK', pill: 'pill-ok' };
}

/** FeedHealth shows the feeds at a glance: running, failed (with why), disabled, and when each runs next. Root only. */
function FeedHealth() {
  const q = useQuery({ queryKey: ['overview-feeds'], queryFn: () => request(OverviewFeedsQuery), refetchInterval: 15_000 });
  return (
    <section className="card feed-health" aria-labelledby="feed-health-title">
      <h2 id="feed-health-title">Feed health</h2>
      <QueryView query={q} loading="Loading feeds…" isEmpty={(d) => d.overview.feeds.length === 0} empty={<p className="muted">No feeds yet.</p>}>
        {(d) => {
          const rows = [...d.overview.feeds].sort((a, b) => feedState(a).order - feedState(b).order || a.feed.name.localeCompare(b.feed.name));
          const count = (label: string) => rows.filter((r) => feedState(r).label === label).length;
          return (
            <>
              <ul className="health-counts" data-testid="feed-health-counts">
                {['Running', 'Failed', 'OK', 'Disabled'].map((l) => (
                  <li key={l}>
                    <strong>{count(l)}</strong> {l.toLowerCase()}
                  </li>
                ))}
              </ul>
              <div className="table-wrap">
                <table className="data-table" aria-label="Feed health">
                  <thead>
                    <tr>
                      <th scope="col">Feed</th>
                      <th scope="col">State</th>
                      <th scope="col">Message</th>
                      <th scope="col">Next run</th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((h) => {
                      const s = feedState(h);
                      const detail = s.label === 'Failed' ? h.feed.lastRun?.errorDetail : '';
                      return (
                        <tr key={h.feed.id} data-feed-name={h.feed.name} data-state={s.label}>
                          <td data-label="Feed">
                            <Link to={`/feeds/${h.feed.id}`} className="strong-link">
                              {h.feed.name}
                            </Link>
                          </td>
                          <td data-label="State">
                            <span className={`pill ${s.pill}`}>{s.label}</span>
                          </td>
                          <td data-label="Message">
                            {h.feed.statusMessage}
                            {detail && <div className="muted small">{detail}</div>}
                          </td>
                          <td data-label="Next run">
                            {h.nextRun ? (
                              <span title={formatDateTime(h.nextRun)}>{formatRelative(h.nextRun)}</span>
                            ) : (
                              <span className="muted">—</span>
                            )}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            </>
          );
        }}
      </QueryView>
    </section>
  );
}
