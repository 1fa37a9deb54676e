package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// Overview is what the dashboard's Overview page shows of the IoCs: counts
// over the whole store, which tenants share.
type Overview struct {
	// ComputedAt is when the figures were read.
	ComputedAt time.Time
	Total      int64
	ByType     []TypeCount
	ByFeed     []FeedCount
	// Days are the last OverviewDays UTC days, oldest first, today last.
	Days []DayCount
	// TopTags are the most frequent tags, most frequent first (malware
	// families are tags: the feeds that name them store them so).
	TopTags []TagCount
	// Expiring are the next OverviewExpiringDays UTC days, today first:
	// IoCs whose expiry falls on that day (today: those still stored,
	// with the ones expired since the sweeper's last pass).
	Expiring []DayCount
}

// TypeCount is how many IoCs of a type are stored.
type TypeCount struct {
	Type  string
	Count int64
}

// FeedCount is how many IoCs a feed has a sighting of.
type FeedCount struct {
	FeedID int64
	Count  int64
}

// DayCount is one UTC day of the daily figures.
type DayCount struct {
	Day time.Time
	// Added is what the day's runs added: sightings new to their feed.
	Added int64
	// Expired is how many IoCs the sweeper removed that day.
	Expired int64
	// Expiring is how many IoCs expire that day.
	Expiring int64
}

// TagCount is how many IoCs carry a tag.
type TagCount struct {
	Tag   string
	Count int64
}

const (
	// OverviewDays is how many days the added/expired series covers.
	OverviewDays = 30
	// OverviewExpiringDays is how far ahead the expiring series looks.
	OverviewExpiringDays = 7
	// OverviewTopTags is how many tags TopTags holds.
	OverviewTopTags = 10
)

// overviewCache keeps the last overview and the ioc_stats version it was
// read at. Reading one is a few small queries whatever the store's size
// (the writers keep the counts), so any change reads it again; between
// changes the cache spares page loads even those and the runs' 30 days.
type overviewCache struct {
	mu      sync.Mutex // held while computing, so concurrent loads share one computation
	version int64
	value   *Overview
}

// Overview returns the overview of the IoCs, computed again when ioc_stats'
// version moved or the UTC day changed: reading it is one row while nothing
// changes.
func (s *Store) Overview(ctx context.Context, now time.Time) (*Overview, error) {
	st, err := s.IoCStats(ctx)
	if err != nil {
		return nil, err
	}
	c := &s.overview
	c.mu.Lock()
	defer c.mu.Unlock()
	// The day changes the series even when no IoC did.
	if v := c.value; v != nil && c.version == st.Version && truncDay(v.ComputedAt).Equal(truncDay(now)) {
		return v, nil
	}
	v, err := s.ComputeOverview(ctx, now)
	if err != nil {
		return nil, err
	}
	c.version, c.value = st.Version, v
	return v, nil
}

// ComputeOverview reads the overview without the cache. The IoC figures
// are counts the writers keep in the transaction of each change
// (ioc_count_types, _feeds, _tags, _expiry; overview_counts.go): a few small
// tables read in one snapshot, whatever the number of IoCs.
func (s *Store) ComputeOverview(ctx context.Context, now time.Time) (*Overview, error) {
	now = now.UTC()
	today := truncDay(now)
	o := &Overview{ComputedAt: now}
	o.Expiring = make([]DayCount, OverviewExpiringDays)
	for i := range o.Expiring {
		o.Expiring[i].Day = today.AddDate(0, 0, i)
	}
	if err := s.readCounts(ctx, o, unixDay(today)); err != nil {
		return nil, err
	}
	first := today.AddDate(0, 0, -(OverviewDays - 1))
	o.Days = make([]DayCount, OverviewDays)
	for i := range o.Days {
		o.Days[i].Day = first.AddDate(0, 0, i)
	}
	dayIndex := func(t time.Time) int { return int(truncDay(t.UTC()).Sub(first) / (24 * time.Hour)) }
	// On the read pool: on SQLite s.DB is the one writing connection, and
	// the read waited behind a key indexer's chunk (0.5-1.1 s at
	// 10,000,000 IoCs).
	var runs []FeedRun
	if err := s.reader().NewSelect().Model(&runs).Column("started_at", "added").
		Where("started_at >= ?", first).Where("added > 0").Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read the runs of the last %d days: %w", OverviewDays, err)
	}
	for _, r := range runs {
		if i := dayIndex(r.StartedAt); i >= 0 && i < OverviewDays {
			o.Days[i].Added += r.Added
		}
	}
	err := scanRows(ctx, s.readDB(), "SELECT day, expired FROM ioc_expiry_days WHERE day >= $1", func(r *sql.Rows) error {
		var day, n int64
		if err := r.Scan(&day, &n); err != nil {
			return err
		}
		if i := int(day - unixDay(first)); i >= 0 && i < OverviewDays {
			o.Days[i].Expired = n
		}
		return nil
	}, unixDay(first))
	if err != nil {
		return nil, fmt.Errorf("store: unable to read the expired indicators per day: %w", err)
	}
	return o, nil
}

// readCounts reads the kept counts into o: by type, by feed, the top tags,
// and the IoCs expiring on each of the OverviewExpiringDays days from today
// (numbered as unixDay). They are read in one transaction, a snapshot on
// both databases (SQLite's WAL, PostgreSQL's REPEATABLE READ), so that the
// figures are of one moment.
func (s *Store) readCounts(ctx context.Context, o *Overview, today int64) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.Dialect == Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.readDB().BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("store: unable to read the indicator counts: %w", err)
	}
	defer tx.Rollback()
	err = scanRows(ctx, tx, "SELECT type, n FROM ioc_count_types ORDER BY n DESC, type", func(r *sql.Rows) error {
		var c TypeCount
		err := r.Scan(&c.Type, &c.Count)
		o.ByType = append(o.ByType, c)
		o.Total += c.Count
		return err
	})
	if err != nil {
		return fmt.Errorf("store: unable to read the indicators by type: %w", err)
	}
	err = scanRows(ctx, tx, "SELECT feed_id, n FROM ioc_count_feeds ORDER BY n DESC, feed_id", func(r *sql.Rows) error {
		var c FeedCount
		err := r.Scan(&c.FeedID, &c.Count)
		o.ByFeed = append(o.ByFeed, c)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: unable to read the indicators by feed: %w", err)
	}
	err = scanRows(ctx, tx, "SELECT tag, n FROM ioc_count_tags ORDER BY n DESC, tag LIMIT $1", func(r *sql.Rows) error {
		var c TagCount
		err := r.Scan(&c.Tag, &c.Count)
		o.TopTags = append(o.TopTags, c)
		return err
	}, OverviewTopTags)
	if err != nil {
		return fmt.Errorf("store: unable to read the indicators by tag: %w", err)
	}
	// Today's count holds the IoCs that expired earlier today and wait for
	// the sweeper, which runs every 15 minutes by default
	// (ingest.DefaultSweepInterval): the figure is "expiring today, still
	// stored", above "from now on" by at most one sweep interval's expiries. Subtracting them exactly would need them found,
	// and no index on iocs has expires_at (docs/decisions.md, "Order keys").
	err = scanRows(ctx, tx, "SELECT day, n FROM ioc_count_expiry WHERE day >= $1 AND day < $2", func(r *sql.Rows) error {
		var day, n int64
		if err := r.Scan(&day, &n); err != nil {
			return err
		}
		if i := int(day - today); i >= 0 && i < OverviewExpiringDays {
			o.Expiring[i].Expiring = n
		}
		return nil
	}, today, today+OverviewExpiringDays)
	if err != nil {
		return fmt.Errorf("store: unable to read the indicators expiring soon: %w", err)
	}
	return nil
}

// recordExpired adds n IoCs to what the sweeper removed on now's UTC day:
// expiry leaves no row behind, so the per-day figure is kept as it happens.
func (s *Store) recordExpired(ctx context.Context, now time.Time, n int64) error {
	if n <= 0 {
		return nil
	}
	_, err := s.DB.ExecContext(ctx, `INSERT INTO ioc_expiry_days (day, expired) VALUES (?, ?)
ON CONFLICT (day) DO UPDATE SET expired = ioc_expiry_days.expired + excluded.expired`, unixDay(now), n)
	if err != nil {
		return fmt.Errorf("store: unable to record the indicators expired today: %w", err)
	}
	return nil
}

// scanRows runs a read on db (a pool or a transaction; bun's take "?"
// placeholders) and calls each for every row.
func scanRows(ctx context.Context, db interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, query string, each func(*sql.Rows) error, args ...any) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// truncDay is the start of t's UTC day.
func truncDay(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// unixDay numbers t's UTC day from 1970-01-01.
func unixDay(t time.Time) int64 { return t.UTC().Unix() / 86400 }
