package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
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

// Status messages of the spec that are not failure kinds (those are the
// ioc.FailureKind strings).
const (
	MessageDisabled     = "Disabled"
	MessageSuccess      = "Success"
	MessageInitializing = "Initializing"
	MessageStopped      = "Stopped"
	MessageRunning      = "Running"
)

// Custom feed categories, stored in Feed.Category and used as the name prefix.
const (
	CategoryTAXII = "TAXII"
	CategoryTSV   = "TSV"
)

// Limits of feed settings. The spec fixes the premium and built-in ones and
// the backfill bound; the custom ranges are ours (docs/decisions.md).
const (
	MaxCustomFeeds       = 30
	MaxBackfillDays      = 30
	BuiltinPollingHours  = 24
	MaxCustomPollingHrs  = 168 // a week
	MaxPremiumPollingHrs = 24
	MaxRetentionDays     = 360
	maxFeedNameLength    = 100
	maxDescriptionLength = 2000
	maxURLLength         = 2048
	maxUsernameLength    = 256
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
	Secret           []byte     `bun:"secret"` // sealed by Secrets; never returned by an API
	Cursor           string     `bun:"cursor,notnull"`
	LastIngestion    *time.Time `bun:"last_ingestion"`
	LastRunAt        *time.Time `bun:"last_run_at"` // end of the last finished run
	DisabledAt       *time.Time `bun:"disabled_at"`
	CreatedAt        time.Time  `bun:"created_at,notnull"`
	UpdatedAt        time.Time  `bun:"updated_at,notnull"`
	// AllowRuleActions lets the feed's Suricata rules keep an action other
	// than alert (pass, drop, reject...) in the rules export; without it
	// they are exported as alert (docs/decisions.md, "Who owns a Suricata
	// sid").
	AllowRuleActions bool `bun:"allow_rule_actions,notnull"`
}

// DerivedStatus is the colour the spec gives the feed: Disabled when it is
// off, Error when its message is a failure or Stopped, else Success.
func (f *Feed) DerivedStatus() FeedStatus {
	switch {
	case !f.Enabled:
		return StatusDisabled
	case IsFailureMessage(f.StatusMessage):
		return StatusError
	default:
		return StatusSuccess
	}
}

// IsFailureMessage reports whether a status message shows a failed or
// stopped feed.
func IsFailureMessage(msg string) bool {
	switch ioc.FailureKind(msg) {
	case ioc.InvalidCredentials, ioc.InvalidURL, ioc.InvalidCollectionURL, ioc.ConnectionError,
		ioc.FetchingDataError, ioc.SurpassedQueryLimit, ioc.FailedToConnect:
		return true
	}
	return msg == MessageStopped
}

// SuccessMessage is the message a good run leaves: Running for built-in
// feeds, Success for the others.
func (f *Feed) SuccessMessage() string {
	if f.Type == FeedBuiltin {
		return MessageRunning
	}
	return MessageSuccess
}

// Editable reports the spec's rule: Custom and Premium feeds can be edited.
func (f *Feed) Editable() bool { return f.Type == FeedCustom || f.Type == FeedPremium }

// Deletable reports the spec's rule: only Custom feeds can be deleted.
func (f *Feed) Deletable() bool { return f.Type == FeedCustom }

// Resettable reports the spec's rule: only Premium feeds can be reset.
func (f *Feed) Resettable() bool { return f.Type == FeedPremium }

// HasSecret reports whether a password (or key) is set, which is all an API
// may say about it.
func (f *Feed) HasSecret() bool { return len(f.Secret) > 0 }

// Feed returns the feed with the given id.
func (s *Store) Feed(ctx context.Context, id int64) (*Feed, error) {
	f := new(Feed)
	if err := s.reader().NewSelect().Model(f).Where("id = ?", id).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("store: feed %d: %w", id, ErrNotFound)
		}
		return nil, fmt.Errorf("store: unable to read feed %d: %w", id, err)
	}
	return f, nil
}

// FeedsByID returns the feeds with the given ids, in no particular order.
func (s *Store) FeedsByID(ctx context.Context, ids []int64) ([]Feed, error) {
	var feeds []Feed
	if len(ids) == 0 {
		return feeds, nil
	}
	if err := s.reader().NewSelect().Model(&feeds).Where("id IN (?)", bun.In(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read feeds: %w", err)
	}
	return feeds, nil
}

// EnabledFeeds lists the feeds that should be scheduled.
func (s *Store) EnabledFeeds(ctx context.Context) ([]Feed, error) {
	var feeds []Feed
	if err := s.reader().NewSelect().Model(&feeds).Where("enabled").Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to list enabled feeds: %w", err)
	}
	return feeds, nil
}

// feedLockClass is the first key of the PostgreSQL advisory locks that keep
// a feed from running twice at once across instances.
const feedLockClass = 0x74666564

// TryLockFeed takes the feed's cluster-wide run lock if it is free: a
// session advisory lock on a connection held until unlock. ok is false when
// another instance holds it. On SQLite, which has one process per database,
// it always succeeds: the runner's own lock is enough there.
func (s *Store) TryLockFeed(ctx context.Context, feedID int64) (unlock func(), ok bool, err error) {
	if s.Dialect != Postgres {
		return func() {}, true, nil
	}
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("store: unable to get a connection to lock feed %d: %w", feedID, err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(?, ?)", feedLockClass, int32(feedID)).Scan(&ok); err != nil {
		conn.Close()
		return nil, false, fmt.Errorf("store: unable to lock feed %d: %w", feedID, err)
	}
	if !ok {
		conn.Close()
		return nil, false, nil
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Closing the connection releases the lock too, should this fail.
		_, _ = conn.ExecContext(ctx, "SELECT pg_advisory_unlock(?, ?)", feedLockClass, int32(feedID))
		conn.Close()
	}, true, nil
}
