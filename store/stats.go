package store

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// IoCStats is what the writers of iocs keep in the one row of ioc_stats, in
// the transaction of each change: readers derive an export's validators and
// the unfiltered count from it without scanning iocs.
type IoCStats struct {
	// Version moves on every committed change of iocs: ingestion, expiry,
	// feed deletion or reset.
	Version int64
	// ChangedAt is when the last change committed (zero before any).
	ChangedAt time.Time
	// Count is how many IoCs are stored.
	Count int64
}

// bumpIoCStatsSQL records a change of iocs that added delta IoCs (negative
// when it removed some). Both writers' exec take $n placeholders.
const bumpIoCStatsSQL = `UPDATE ioc_stats SET version = version + 1,
	changed_at = $1, ioc_count = ioc_count + $2 WHERE id = 1`

// markChangesSQL marks how many change stamps were taken (one an IoC row
// written) up to the last one: the IoCs changed since a stamp are at most
// the changes taken since the last mark at or below it (changedSinceAt).
const markChangesSQL = `INSERT INTO ioc_change_marks (stamp, changes)
	SELECT stamp, changes FROM ioc_stats WHERE id = 1 ON CONFLICT (stamp) DO NOTHING`

// bumpIoCStats moves ioc_stats for a change of iocs in exec's transaction,
// and marks its changes as they stand.
func bumpIoCStats(ctx context.Context, exec func(ctx context.Context, query string, args ...any) (int64, error), delta int64) error {
	if _, err := exec(ctx, bumpIoCStatsSQL, micros(time.Now()), delta); err != nil {
		return fmt.Errorf("store: unable to record a change of indicators: %w", err)
	}
	if _, err := exec(ctx, markChangesSQL); err != nil {
		return fmt.Errorf("store: unable to record a change of indicators: %w", err)
	}
	return nil
}

// IoCStats reads ioc_stats: one row by primary key.
func (s *Store) IoCStats(ctx context.Context) (IoCStats, error) {
	var st IoCStats
	var changed int64
	err := s.readDB().QueryRowContext(ctx, "SELECT version, changed_at, ioc_count FROM ioc_stats WHERE id = 1").
		Scan(&st.Version, &changed, &st.Count)
	if err != nil {
		return st, fmt.Errorf("store: unable to read indicator statistics: %w", err)
	}
	if changed > 0 {
		st.ChangedAt = fromMicros(changed)
	}
	return st, nil
}

// healIoCCount sets ioc_count to the sum of the types' kept counts, so
// that a path that ever missed a delta of the one heals on the sweeper's
// next pass from the other, which the writers count apart in the same
// transaction (overviewDelta). It does not move the version: no IoC
// changed. It used to count iocs: at 10,000,000 IoCs on PostgreSQL a
// 3-second scan every pass, holding ioc_stats' row (every writer waits
// for it) and, for as long, a snapshot under which no scan may mark the
// index entries of the IoCs just swept dead.
func (s *Store) healIoCCount(ctx context.Context) error {
	return s.writeTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE ioc_stats SET ioc_count = (SELECT coalesce(sum(n), 0) FROM ioc_count_types) WHERE id = 1")
		return err
	})
}

// writing counts a batch or sweep under way until the function it
// returns is called.
func (s *Store) writing() (done func()) {
	s.writes.Add(1)
	return func() { s.writes.Add(-1) }
}
