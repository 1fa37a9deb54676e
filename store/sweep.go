package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/internal/background"
)

// recomputeSQL sets the aggregates of n IoCs from their remaining
// sightings, with a change stamp each: it takes n pairs (id, stamp) bound
// to its VALUES rows, then the ids again to an IN (?), without which
// PostgreSQL joins the VALUES to a scan of every IoC. An IoC with an
// inline sighting has no other: its aggregates are that sighting.
func (s *Store) recomputeSQL(n int) string {
	tags := `(SELECT json_group_array(t) FROM (SELECT DISTINCT j.value AS t FROM sighting_rows s, json_each(s.tags) j
		WHERE s.ioc_id = iocs.id ORDER BY 1))`
	if s.Dialect == Postgres {
		tags = `(SELECT coalesce(jsonb_agg(t ORDER BY t), '[]'::jsonb) FROM (SELECT DISTINCT jsonb_array_elements_text(s.tags) AS t
		FROM sighting_rows s WHERE s.ioc_id = iocs.id) u)`
	}
	return `UPDATE iocs SET
	score = (SELECT max(score) FROM sighting_rows s WHERE s.ioc_id = iocs.id),
	tags = ` + tags + `,
	first_seen = (SELECT min(first_seen) FROM sighting_rows s WHERE s.ioc_id = iocs.id),
	last_seen = (SELECT max(last_seen) FROM sighting_rows s WHERE s.ioc_id = iocs.id),
	expires_at = (SELECT max(expires_at) FROM sighting_rows s WHERE s.ioc_id = iocs.id),
	changed_at = r.column2
FROM (VALUES ` + strings.Repeat("(?, ?), ", n-1) + `(?, ?)) AS r
WHERE iocs.id IN (?) AND iocs.id = r.column1 AND feed_id IS NULL AND EXISTS (SELECT 1 FROM sighting_rows s WHERE s.ioc_id = iocs.id)`
}

// txExec is tx as the writers' exec, which takes $n placeholders.
func txExec(tx bun.Tx) func(ctx context.Context, query string, args ...any) (int64, error) {
	return func(ctx context.Context, query string, args ...any) (int64, error) {
		r, err := tx.ExecContext(ctx, strings.NewReplacer("$1", "?", "$2", "?").Replace(query), args...)
		if err != nil {
			return 0, err
		}
		return r.RowsAffected()
	}
}

// writeTx runs fn in a transaction that may change sightings: on PostgreSQL
// it first takes the IoC write lock (see iocWriteLockID).
func (s *Store) writeTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.lockedTx(ctx, iocWriteLockID, fn)
}

// lockedTx runs fn in a transaction that first takes the advisory lock
// lockID on PostgreSQL; SQLite's write transactions are one at a time.
func (s *Store) lockedTx(ctx context.Context, lockID int64, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if s.Dialect == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", lockID); err != nil {
				return err
			}
		}
		return fn(ctx, tx)
	})
}

// dropOrphans deletes those of ids left without a sighting and recomputes
// the others; it returns how many IoCs it deleted. Its callers delete the
// sightings before it, and both under keepCounts. An IoC with an inline
// sighting is never an orphan: deleteInline removes it with its sighting.
func (s *Store) dropOrphans(ctx context.Context, tx bun.Tx, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var gone []goneIoC
	err := tx.NewRaw(`DELETE FROM iocs WHERE id IN (?) AND feed_id IS NULL
AND NOT EXISTS (SELECT 1 FROM sighting_rows s WHERE s.ioc_id = iocs.id) RETURNING id, tags`, bun.In(ids)).Scan(ctx, &gone)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	n := int64(len(gone))
	if n > 0 {
		if err := s.dropKeysOfGone(ctx, tx, ids, gone); err != nil {
			return n, err
		}
	}
	exec := txExec(tx)
	if err := stampChange(ctx, exec); err != nil {
		return n, err
	}
	stamp, err := takeStamps(ctx, func(ctx context.Context) (int64, error) {
		var v int64
		err := tx.QueryRowContext(ctx, "SELECT stamp FROM ioc_stats WHERE id = 1").Scan(&v)
		return v, err
	}, exec, len(ids))
	if err != nil {
		return n, err
	}
	// An id twice takes either of its stamps: still one no other IoC has.
	pairs := make([]any, 0, 2*len(ids))
	for i, id := range ids {
		pairs = append(pairs, id, stamp+int64(i))
	}
	if _, err := tx.ExecContext(ctx, s.recomputeSQL(len(ids)), append(pairs, bun.In(ids))...); err != nil {
		return n, err
	}
	if err := widenExpiryZones(ctx, exec, stamp-1, stamp+int64(len(ids))-1); err != nil {
		return n, err
	}
	return n, bumpIoCStats(ctx, exec, -n)
}

// dropKeysOfGone drops the order keys of those of ids that are gone, and
// the tag keys of gone, the IoCs a sweeper's delete returned.
func (s *Store) dropKeysOfGone(ctx context.Context, tx bun.Tx, ids []int64, gone []goneIoC) error {
	if err := dropGoneKeys(ctx, tx, s.orderKeys(), ids); err != nil {
		return err
	}
	return dropGoneTagKeys(ctx, tx, s.Dialect, gone)
}

// deleteInline deletes at most limit IoCs whose one sighting is the feed's,
// kept in their row, and matches cond (a condition on iocs with args, ""
// for none): each goes with its sighting. They are read in expiry order, a
// range of iocs_feed_idx: on PostgreSQL latest expiry first. IoCs written
// together expire together, the newest last, and the first pages of
// FIRST_SEEN and LAST_SEEN DESC start at the newest. Swept oldest first, a
// million of them lay dead under the live ones until the last batch
// uncovered them all at once, and the next such page read through every
// one (56 ms at 10,000,000 IoCs; PostgreSQL's indexes keep a dead entry
// until vacuum); newest first, each page steps over what went since the
// last (a median of 4.9 ms during the sweep, 16.2 at worst). SQLite
// deletes an index entry with its row, and there the sweep is better away
// from where the pages read: newest first, TYPE DESC took 77-655 ms
// during the sweep. found is how many it found, deleted how many of them
// it deleted.
func (s *Store) deleteInline(ctx context.Context, tx bun.Tx, feedID int64, cond string, limit int, args ...any) (found int, deleted int64, err error) {
	q := tx.NewSelect().Table("iocs").Column("id").Where("feed_id = ?", feedID)
	if cond != "" {
		q = q.Where(cond, args...)
	}
	var ids []int64
	order := "feed_id, expires_at"
	if s.Dialect == Postgres {
		order = "feed_id DESC, expires_at DESC, id DESC"
	}
	if err := q.OrderExpr(order).Limit(int64(limit)).Scan(ctx, &ids); err != nil {
		return 0, 0, err
	}
	if len(ids) == 0 {
		return 0, 0, nil
	}
	var gone []goneIoC
	err = s.keepCounts(ctx, tx, ids, func() error {
		// By id: "+" keeps SQLite, without statistics, off the feed's
		// range of iocs_feed_idx, which it walked whole for each chunk
		// (53 ms a chunk of 5,000 at 1,000,000 IoCs, 13 by id).
		err := tx.NewRaw("DELETE FROM iocs WHERE id IN (?) AND +feed_id = ? RETURNING id, tags", bun.In(ids), feedID).Scan(ctx, &gone)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		deleted = int64(len(gone))
		return err
	})
	if err != nil || deleted == 0 {
		return len(ids), deleted, err
	}
	if err := s.dropKeysOfGone(ctx, tx, ids, gone); err != nil {
		return len(ids), deleted, err
	}
	return len(ids), deleted, bumpIoCStats(ctx, txExec(tx), -deleted)
}

// maintenanceBatch is how many sightings DeleteFeedSightings removes per
// transaction: small enough that ingestion waits at most a fraction of a
// second for the write lock.
const maintenanceBatch = 5000

// DeleteFeedSightings removes the feed's sightings and the IoCs left without
// one, in transactions of a few thousand IoCs (no long lock), recomputing the
// aggregates of IoCs that keep sightings of other feeds, at the background's
// priority (background.Run).
func (s *Store) DeleteFeedSightings(ctx context.Context, feedID int64) (removedIoCs int64, err error) {
	background.Run(func() { _, removedIoCs, err = s.deleteFeedSightings(ctx, feedID, maintenanceBatch) })
	return removedIoCs, err
}

// deleteFeedSightings is DeleteFeedSightings in transactions of batchSize
// IoCs; it also returns how many sightings it deleted.
func (s *Store) deleteFeedSightings(ctx context.Context, feedID int64, batchSize int) (sightings, removedIoCs int64, err error) {
	for {
		var done bool
		err := s.writeTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			// The first sightings in the feed's index (the order asks
			// PostgreSQL for it too); they are all deleted below.
			var ids []int64
			if err := tx.NewRaw(`SELECT ioc_id FROM sighting_rows WHERE feed_id = ? ORDER BY expires_at LIMIT ?`,
				feedID, batchSize).Scan(ctx, &ids); err != nil {
				return err
			}
			if len(ids) == 0 {
				// Then the IoCs whose one sighting is the feed's.
				found, n, err := s.deleteInline(ctx, tx, feedID, "", batchSize)
				sightings += n
				removedIoCs += n
				done = found == 0
				return err
			}
			slices.Sort(ids)
			ids = slices.Compact(ids)
			return s.keepCounts(ctx, tx, ids, func() error {
				r, err := tx.ExecContext(ctx, "DELETE FROM sighting_rows WHERE feed_id = ? AND ioc_id IN (?)", feedID, bun.In(ids))
				if err != nil {
					return err
				}
				c, _ := r.RowsAffected()
				sightings += c
				n, err := s.dropOrphans(ctx, tx, ids)
				removedIoCs += n
				return err
			})
		})
		if err != nil {
			return sightings, removedIoCs, fmt.Errorf("store: unable to delete the sightings of feed %d: %w", feedID, err)
		}
		if done {
			return sightings, removedIoCs, nil
		}
	}
}

// SweepExpired deletes sightings that expired at now and the IoCs left
// without one, feed by feed in transactions of batchSize sightings,
// recomputing the aggregates of IoCs that keep live sightings. It also
// deletes the sightings of feeds that are gone (a feed row deleted without
// DeleteFeedSightings), as deleting the feed would have, with the IoCs
// they leave behind. It runs at the background's priority (background.Run).
func (s *Store) SweepExpired(ctx context.Context, now time.Time, batchSize int) (sightings, iocs int64, err error) {
	background.Run(func() { sightings, iocs, err = s.sweepExpired(ctx, now, batchSize) })
	return sightings, iocs, err
}

func (s *Store) sweepExpired(ctx context.Context, now time.Time, batchSize int) (sightings, iocs int64, err error) {
	if batchSize <= 0 {
		batchSize = maintenanceBatch
	}
	defer s.writing()()
	nowUS := micros(now)
	// Sightings are indexed by (feed, expiry), the rows' and the inline
	// ones': sweeping each feed sweeps them all, but for those of feeds
	// that are gone (below).
	var feeds []int64
	if err := s.reader().NewRaw("SELECT id FROM feeds ORDER BY id").Scan(ctx, &feeds); err != nil {
		return 0, 0, fmt.Errorf("store: unable to sweep expired sightings: %w", err)
	}
	for _, feedID := range feeds {
		for {
			var n int
			err := s.writeTx(ctx, func(ctx context.Context, tx bun.Tx) error {
				var ids []int64
				if err := tx.NewRaw(`SELECT ioc_id FROM sighting_rows WHERE feed_id = ? AND expires_at <= ? ORDER BY expires_at LIMIT ?`,
					feedID, nowUS, batchSize).Scan(ctx, &ids); err != nil {
					return err
				}
				if len(ids) < batchSize {
					// The rows are done: then the IoCs whose one sighting
					// is the feed's and expired, which go with it.
					found, d, err := s.deleteInline(ctx, tx, feedID, "expires_at <= ?", batchSize-len(ids), nowUS)
					sightings += d
					iocs += d
					n = found
					if err != nil {
						return err
					}
				}
				n += len(ids)
				if len(ids) == 0 {
					return nil
				}
				slices.Sort(ids)
				ids = slices.Compact(ids)
				// By key: "+" keeps the planner off the (feed, expiry)
				// range, which holds every expired sighting of the feed.
				return s.keepCounts(ctx, tx, ids, func() error {
					r, err := tx.ExecContext(ctx, "DELETE FROM sighting_rows WHERE ioc_id IN (?) AND feed_id = ? AND +expires_at <= ?",
						bun.In(ids), feedID, nowUS)
					if err != nil {
						return err
					}
					c, _ := r.RowsAffected()
					sightings += c
					d, err := s.dropOrphans(ctx, tx, ids)
					iocs += d
					return err
				})
			})
			if err != nil {
				return sightings, iocs, fmt.Errorf("store: unable to sweep the expired sightings of feed %d: %w", feedID, err)
			}
			if n < batchSize {
				break
			}
		}
	}
	// The per-feed loop never meets the sightings of a feed whose row
	// went: they would keep their IoCs for ever. The feed indexes name
	// every feed that has sightings, so they are found without an index
	// on iocs' expiry (docs/decisions.md, "Order keys").
	gone, err := s.goneFeeds(ctx)
	if err != nil {
		return sightings, iocs, fmt.Errorf("store: unable to find the sightings of deleted feeds: %w", err)
	}
	for _, feedID := range gone {
		n, d, err := s.deleteFeedSightings(ctx, feedID, batchSize)
		sightings += n
		iocs += d
		if err != nil {
			return sightings, iocs, err
		}
	}
	if err := s.recordExpired(ctx, now, iocs); err != nil {
		return sightings, iocs, err
	}
	if err := s.healIoCCount(ctx); err != nil {
		return sightings, iocs, fmt.Errorf("store: unable to heal the count of indicators: %w", err)
	}
	return sightings, iocs, nil
}

// goneFeeds returns the feeds that have sightings, rows or inline, but no
// row in feeds. It skips through each feed index from one feed to the next
// (an index probe per feed, not a read of every sighting).
func (s *Store) goneFeeds(ctx context.Context) ([]int64, error) {
	var ids []int64
	for _, table := range []string{"sighting_rows", "iocs"} {
		var some []int64
		// "feed_id >" keeps iocs to its partial feed index.
		err := s.reader().NewRaw(`WITH RECURSIVE f (id) AS (
	SELECT min(feed_id) FROM ? WHERE feed_id > 0
	UNION ALL
	SELECT (SELECT min(feed_id) FROM ? WHERE feed_id > f.id) FROM f WHERE f.id IS NOT NULL
)
SELECT id FROM f WHERE id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM feeds WHERE feeds.id = f.id)`,
			bun.Ident(table), bun.Ident(table)).Scan(ctx, &some)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		ids = append(ids, some...)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// CountFeedIoCs returns how many IoCs the feed has a sighting of.
func (s *Store) CountFeedIoCs(ctx context.Context, feedID int64) (int64, error) {
	var n int64
	// The two places apart: an IoC with an inline sighting has no row.
	if err := s.reader().NewRaw(`SELECT (SELECT count(*) FROM iocs WHERE feed_id = ?)
	+ (SELECT count(DISTINCT ioc_id) FROM sighting_rows WHERE feed_id = ?)`, feedID, feedID).Scan(ctx, &n); err != nil {
		return 0, fmt.Errorf("store: unable to count the indicators of feed %d: %w", feedID, err)
	}
	return n, nil
}

// ExpireUnseen removes the feed's sightings from source that were last
// seen before since, and the IoCs left without one, recomputing the
// aggregates of the others, in transactions of a few thousand. A snapshot
// list calls it after a complete run that started at since: every value
// the run handed over had its sighting's last_seen set to the time of its
// batch (not before since), so what is older was dropped from the list.
// It runs at the background's priority (background.Run).
func (s *Store) ExpireUnseen(ctx context.Context, feedID int64, source string, since time.Time) (removed int64, err error) {
	background.Run(func() { removed, err = s.expireUnseen(ctx, feedID, source, since) })
	return removed, err
}

func (s *Store) expireUnseen(ctx context.Context, feedID int64, source string, since time.Time) (removed int64, err error) {
	sinceUS := micros(since)
	for {
		var n int
		err := s.writeTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			var ids []int64
			if err := tx.NewRaw(`SELECT ioc_id FROM sighting_rows WHERE feed_id = ? AND source = ? AND last_seen < ? LIMIT ?`,
				feedID, source, sinceUS, maintenanceBatch).Scan(ctx, &ids); err != nil {
				return err
			}
			if len(ids) < maintenanceBatch {
				// Then the IoCs whose one sighting it is, which go with it.
				found, d, err := s.deleteInline(ctx, tx, feedID, "source = ? AND last_seen < ?", maintenanceBatch-len(ids), source, sinceUS)
				removed += d
				n = found
				if err != nil {
					return err
				}
			}
			n += len(ids)
			if len(ids) == 0 {
				return nil
			}
			return s.keepCounts(ctx, tx, ids, func() error {
				r, err := tx.ExecContext(ctx, `DELETE FROM sighting_rows WHERE feed_id = ? AND source = ? AND last_seen < ? AND ioc_id IN (?)`,
					feedID, source, sinceUS, bun.In(ids))
				if err != nil {
					return err
				}
				c, _ := r.RowsAffected()
				removed += c
				_, err = s.dropOrphans(ctx, tx, ids)
				return err
			})
		})
		if err != nil {
			return removed, fmt.Errorf("store: unable to expire what feed %d's list %q no longer holds: %w", feedID, source, err)
		}
		if n < maintenanceBatch {
			return removed, nil
		}
	}
}
