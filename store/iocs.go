package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
)

// IoC is one indicator, unique by (type, normalised value). Score, tags and
// expiry summarise its live sightings.
type IoC struct {
	bun.BaseModel `bun:"table:iocs,alias:iocs"`

	ID        int64     `bun:"id,pk,autoincrement"`
	Type      ioc.Kind  `bun:"type,notnull"`
	Value     string    `bun:"value,notnull"`
	Score     int       `bun:"score,notnull"`
	Tags      []string  `bun:"tags,type:json"`
	FirstSeen time.Time `bun:"-"`
	LastSeen  time.Time `bun:"-"`
	ExpiresAt time.Time `bun:"-"`
	storedTimes
	// ChangedAtMicros is the stamp of the IoC's last change (unix
	// microseconds; see iocs_changes.go). Only the batch writers and the
	// sweeper set it, in SQL: models never write it.
	ChangedAtMicros int64 `bun:"changed_at,scanonly"`
}

var (
	_ bun.BeforeAppendModelHook = (*IoC)(nil)
	_ bun.AfterScanRowHook      = (*IoC)(nil)
)

// BeforeAppendModel sets the stored times from FirstSeen, LastSeen and
// ExpiresAt.
func (i *IoC) BeforeAppendModel(context.Context, bun.Query) error {
	i.storedTimes = storeTimes(i.FirstSeen, i.LastSeen, i.ExpiresAt)
	return nil
}

// AfterScanRow sets FirstSeen, LastSeen and ExpiresAt from the stored times.
func (i *IoC) AfterScanRow(context.Context) error {
	i.FirstSeen, i.LastSeen, i.ExpiresAt = i.storedTimes.times()
	return nil
}

// Sighting is one (feed, source) reporting an IoC. Its key is (IoCID,
// FeedID, Source). Sightings are read through the sightings view: the rows
// of sighting_rows, and the one sighting an IoC reported by one (feed,
// source) keeps in its own row (iocs.feed_id, iocs.source; see
// aggregate.feedID). Writers write the two places themselves.
type Sighting struct {
	bun.BaseModel `bun:"table:sightings"`

	IoCID     int64     `bun:"ioc_id,pk"`
	FeedID    int64     `bun:"feed_id,pk"`
	Source    string    `bun:"source,pk"`
	Score     int       `bun:"score,notnull"`
	Tags      []string  `bun:"tags,type:json"`
	FirstSeen time.Time `bun:"-"`
	LastSeen  time.Time `bun:"-"`
	ExpiresAt time.Time `bun:"-"`
	storedTimes
}

// sightingColumns are a sighting's columns in sighting_rows and the
// sightings view.
const sightingColumns = "ioc_id, feed_id, source, score, tags, first_seen, last_seen, expires_at"

var (
	_ bun.BeforeAppendModelHook = (*Sighting)(nil)
	_ bun.AfterScanRowHook      = (*Sighting)(nil)
)

// BeforeAppendModel sets the stored times from FirstSeen, LastSeen and
// ExpiresAt.
func (g *Sighting) BeforeAppendModel(context.Context, bun.Query) error {
	g.storedTimes = storeTimes(g.FirstSeen, g.LastSeen, g.ExpiresAt)
	return nil
}

// AfterScanRow sets FirstSeen, LastSeen and ExpiresAt from the stored times.
func (g *Sighting) AfterScanRow(context.Context) error {
	g.FirstSeen, g.LastSeen, g.ExpiresAt = g.storedTimes.times()
	return nil
}

// storedTimes are the time columns of iocs and sightings as the databases
// keep them: unix microseconds, which write, index and compare faster than
// timestamps (a third of the bytes of SQLite's text form; docs/benchmarks.md).
// The models' hooks keep them in step with the time.Time fields, which are
// what callers use; queries compare these columns with micros(t).
type storedTimes struct {
	FirstSeenMicros int64 `bun:"first_seen,notnull"`
	LastSeenMicros  int64 `bun:"last_seen,notnull"`
	ExpiresAtMicros int64 `bun:"expires_at,notnull"`
}

func storeTimes(first, last, expires time.Time) storedTimes {
	return storedTimes{micros(first), micros(last), micros(expires)}
}

func (t storedTimes) times() (first, last, expires time.Time) {
	return fromMicros(t.FirstSeenMicros), fromMicros(t.LastSeenMicros), fromMicros(t.ExpiresAtMicros)
}

// micros is t as a time column of iocs or sightings holds it.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros is the time a time column of iocs or sightings holds, in UTC.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
