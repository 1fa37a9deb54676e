package store

import (
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
)

// IoC is one indicator, unique by (type, normalised value). Score, tags and
// expiry summarise its live sightings.
type IoC struct {
	bun.BaseModel `bun:"table:iocs"`

	ID        int64     `bun:"id,pk,autoincrement"`
	Type      ioc.Kind  `bun:"type,notnull"`
	Value     string    `bun:"value,notnull"`
	Score     int       `bun:"score,notnull"`
	Tags      []string  `bun:"tags,type:json"`
	FirstSeen time.Time `bun:"first_seen,notnull"`
	LastSeen  time.Time `bun:"last_seen,notnull"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

// Sighting is one (feed, source) reporting an IoC.
type Sighting struct {
	bun.BaseModel `bun:"table:sightings"`

	ID        int64     `bun:"id,pk,autoincrement"`
	IoCID     int64     `bun:"ioc_id,notnull"`
	FeedID    int64     `bun:"feed_id,notnull"`
	Source    string    `bun:"source,notnull"`
	Score     int       `bun:"score,notnull"`
	Tags      []string  `bun:"tags,type:json"`
	FirstSeen time.Time `bun:"first_seen,notnull"`
	LastSeen  time.Time `bun:"last_seen,notnull"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}
