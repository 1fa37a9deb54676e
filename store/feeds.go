package store

import (
	"time"

	"github.com/uptrace/bun"
)

// FeedType is where a feed comes from.
type FeedType string

const (
	FeedBuiltin FeedType = "builtin"
	FeedCustom  FeedType = "custom"
	FeedPremium FeedType = "premium"
)

// FeedStatus is the colour of a feed's status.
type FeedStatus string

const (
	StatusSuccess  FeedStatus = "success"
	StatusError    FeedStatus = "error"
	StatusDisabled FeedStatus = "disabled"
)

// Feed is a source of indicators and its poll state. The poll state (cursor,
// last run) lives on the row so that a restart resumes where it stopped.
type Feed struct {
	bun.BaseModel `bun:"table:feeds"`

	ID               int64      `bun:"id,pk,autoincrement"`
	Name             string     `bun:"name,notnull"`
	Type             FeedType   `bun:"type,notnull"`
	Kind             string     `bun:"kind,notnull"` // built-in or premium kind; empty for custom
	Category         string     `bun:"category,notnull"`
	Enabled          bool       `bun:"enabled,notnull"`
	StatusMessage    string     `bun:"status_message,notnull"`
	PollingFrequency int        `bun:"polling_frequency,notnull"` // hours
	RetentionPeriod  int        `bun:"retention_period,notnull"`  // days
	BackfillDays     int        `bun:"backfill_days,notnull"`
	Description      string     `bun:"description,notnull"`
	CollectionURL    string     `bun:"collection_url,notnull"`
	Username         string     `bun:"username,notnull"`
	Secret           []byte     `bun:"secret"` // encrypted; never returned by an API
	Cursor           string     `bun:"cursor,notnull"`
	LastIngestion    *time.Time `bun:"last_ingestion"`
	LastRunAt        *time.Time `bun:"last_run_at"`
	DisabledAt       *time.Time `bun:"disabled_at"`
	CreatedAt        time.Time  `bun:"created_at,notnull"`
	UpdatedAt        time.Time  `bun:"updated_at,notnull"`
}

// FeedRun is the record of one fetch of a feed.
type FeedRun struct {
	bun.BaseModel `bun:"table:feed_runs"`

	ID          int64       `bun:"id,pk,autoincrement"`
	FeedID      int64       `bun:"feed_id,notnull"`
	StartedAt   time.Time   `bun:"started_at,notnull"`
	EndedAt     *time.Time  `bun:"ended_at"`
	Fetched     int64       `bun:"fetched,notnull"`
	Stored      int64       `bun:"stored,notnull"`
	Rejected    int64       `bun:"rejected,notnull"`
	Rejections  []Rejection `bun:"rejections,type:json"`
	ErrorKind   string      `bun:"error_kind,notnull"`
	ErrorDetail string      `bun:"error_detail,notnull"`
	Note        string      `bun:"note,notnull"`
}

// Rejection is one input record a run could not use.
type Rejection struct {
	Position int64  `json:"position"`
	Reason   string `json:"reason"`
}
