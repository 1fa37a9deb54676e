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
	// ComputedAt is when the figures were read (they may lag the store by
	// up to OverviewMaxStale while ingestion runs).
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
	// IoCs whose expiry falls on that day (today: from now on).
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
	// OverviewMaxStale is the most a cached overview may lag the IoCs once
	// they changed: ioc_stats' version moves with every ingestion batch, so
	// without it a busy server would recount the store (0.35 s on SQLite,
	// 1.5 s on PostgreSQL at 1,000,000 IoCs) on every page load.
	OverviewMaxStale = time.Minute
	// overviewStaleFactor scales how long an overview may lag with what it
	// cost: under constant ingestion, recounting takes at most about
	// 1/overviewStaleFactor of the time, and a small store is always fresh.
	overviewStaleFactor = 20
)

// overviewCache keeps the last overview, the ioc_stats version it was read
// at and what reading it cost.
type overviewCache struct {
	mu      sync.Mutex // held while computing, so concurrent loads share one computation
	version int64
	cost    time.Duration
	value   *Overview
}

// Overview returns the overview of the IoCs, computed again only when
// ioc_stats' version moved and the last one is older than its staleness
// bound (overviewStaleFactor times its cost, at most OverviewMaxStale):
// reading it is one row while nothing changes.
func (s *Store) Overview(ctx context.Context, now time.Time) (*Overview, error) {
	st, err := s.IoCStats(ctx)
	if err != nil {
		return nil, err
	}
	c := &s.overview
	c.mu.Lock()
	defer c.mu.Unlock()
	// The day changes the series even when no IoC did.
	if v := c.value; v != nil && truncDay(v.ComputedAt).Equal(truncDay(now)) &&
		(c.version == st.Version || now.Sub(v.ComputedAt) < min(OverviewMaxStale, overviewStaleFactor*c.cost)) {
		return v, nil
	}
	start := time.Now()
	v, err := s.ComputeOverview(ctx, now)
	if err != nil {
		return nil, err
	}
	c.version, c.value, c.cost = st.Version, v, time.Since(start)
	return v, nil
}

// ComputeOverview reads the overview from the tables, without the cache.
// The scans of iocs run on the read pool: on SQLite they must not hold the
// writer's one connection for the seconds they take at 1,000,000 IoCs.
func (s *Store) ComputeOverview(ctx context.Context, now time.Time) (*Overview, error) {
	now = now.UTC()
	today := truncDay(now)
	o := &Overview{ComputedAt: now}
	db := s.readDB()
	err := scanRows(ctx, db, "SELECT type, count(*) FROM iocs GROUP BY type ORDER BY 2 DESC, 1", func(r *sql.Rows) error {
		var c TypeCount
		err := r.Scan(&c.Type, &c.Count)
		o.ByType = append(o.ByType, c)
		o.Total += c.Count
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: unable to count indicators by type: %w", err)
	}
	// The two places apart (an IoC with an inline sighting has no row),
	// each counted from a feed index.
	err = scanRows(ctx, db, `SELECT feed_id, sum(n) FROM (
	SELECT feed_id, count(*) AS n FROM iocs WHERE feed_id IS NOT NULL GROUP BY feed_id
	UNION ALL SELECT feed_id, count(DISTINCT ioc_id) FROM sighting_rows GROUP BY feed_id) AS c
GROUP BY feed_id ORDER BY 2 DESC, 1`, func(r *sql.Rows) error {
		var c FeedCount
		err := r.Scan(&c.FeedID, &c.Count)
		o.ByFeed = append(o.ByFeed, c)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: unable to count indicators by feed: %w", err)
	}
	tags := `SELECT j.value, count(*) FROM iocs, json_each(iocs.tags) j GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $1`
	if s.Dialect == Postgres {
		tags = `SELECT t, count(*) FROM iocs, jsonb_array_elements_text(iocs.tags) t GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $1`
	}
	err = scanRows(ctx, db, tags, func(r *sql.Rows) error {
		var c TagCount
		err := r.Scan(&c.Tag, &c.Count)
		o.TopTags = append(o.TopTags, c)
		return err
	}, OverviewTopTags)
	if err != nil {
		return nil, fmt.Errorf("store: unable to count indicators by tag: %w", err)
	}

	first := today.AddDate(0, 0, -(OverviewDays - 1))
	o.Days = make([]DayCount, OverviewDays)
	for i := range o.Days {
		o.Days[i].Day = first.AddDate(0, 0, i)
	}
	dayIndex := func(t time.Time) int { return int(truncDay(t.UTC()).Sub(first) / (24 * time.Hour)) }
	var runs []FeedRun
	if err := s.DB.NewSelect().Model(&runs).Column("started_at", "added").
		Where("started_at >= ?", first).Where("added > 0").Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read the runs of the last %d days: %w", OverviewDays, err)
	}
	for _, r := range runs {
		if i := dayIndex(r.StartedAt); i >= 0 && i < OverviewDays {
			o.Days[i].Added += r.Added
		}
	}
	err = scanRows(ctx, db, "SELECT day, expired FROM ioc_expiry_days WHERE day >= $1", func(r *sql.Rows) error {
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

	o.Expiring = make([]DayCount, OverviewExpiringDays)
	for i := range o.Expiring {
		o.Expiring[i].Day = today.AddDate(0, 0, i)
	}
	// A scan of iocs, as the tag counts above: no index on iocs has
	// expires_at (docs/decisions.md, "Order keys"), and through the expiry
	// keys the count would cost a probe of iocs per IoC that expires
	// within the week, up to the whole table.
	err = scanRows(ctx, db, `SELECT expires_at / $1, count(*) FROM iocs WHERE expires_at > $2 AND expires_at < $3 GROUP BY 1`,
		func(r *sql.Rows) error {
			var day, n int64
			if err := r.Scan(&day, &n); err != nil {
				return err
			}
			if i := int(day - unixDay(today)); i >= 0 && i < OverviewExpiringDays {
				o.Expiring[i].Expiring = n
			}
			return nil
		}, int64(24*time.Hour/time.Microsecond), micros(now), micros(today.AddDate(0, 0, OverviewExpiringDays)))
	if err != nil {
		return nil, fmt.Errorf("store: unable to count the indicators expiring soon: %w", err)
	}
	return o, nil
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

// scanRows runs a read on db and calls each for every row.
func scanRows(ctx context.Context, db *sql.DB, query string, each func(*sql.Rows) error, args ...any) error {
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
