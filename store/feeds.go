package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

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

// FeedRun is the record of one fetch of a feed.
type FeedRun struct {
	bun.BaseModel `bun:"table:feed_runs"`

	ID        int64      `bun:"id,pk,autoincrement"`
	FeedID    int64      `bun:"feed_id,notnull"`
	StartedAt time.Time  `bun:"started_at,notnull"`
	EndedAt   *time.Time `bun:"ended_at"`
	Fetched   int64      `bun:"fetched,notnull"`
	Stored    int64      `bun:"stored,notnull"`
	// Added counts the stored sightings that were new to the feed (not a
	// re-report of one it has): what the daily limit counts.
	Added       int64       `bun:"added,notnull"`
	Rejected    int64       `bun:"rejected,notnull"`
	Rejections  []Rejection `bun:"rejections,type:json"`
	ErrorKind   string      `bun:"error_kind,notnull"`
	ErrorDetail string      `bun:"error_detail,notnull"`
	Note        string      `bun:"note,notnull"`
	// The progress of a kind written at a constant rate (RISK_LIST) after
	// the run: rows of its current lists written so far (over this run and
	// the ones before) of their total, and when the rest is expected in;
	// zero and nil for the other kinds.
	BacklogWritten     int64      `bun:"backlog_written,notnull"`
	BacklogTotal       int64      `bun:"backlog_total,notnull"`
	ExpectedCompletion *time.Time `bun:"expected_completion"`
}

// Rejection is one input record a run could not use.
type Rejection struct {
	Position int64  `json:"position"`
	Reason   string `json:"reason"`
}

// MaxRejections is how many rejected records a run keeps with their reasons.
const MaxRejections = 20

// NewCustomFeed is the input of CreateCustomFeed. Secret is already sealed.
type NewCustomFeed struct {
	Category         string
	Name             string
	CollectionURL    string
	Username         string
	Secret           []byte
	PollingFrequency int
	RetentionPeriod  int
	BackfillDays     int
	Description      string
	AllowRuleActions bool
}

// customFeedsLockID serialises custom feed creation on PostgreSQL so that
// two concurrent creates cannot both pass the per-organisation limit.
const customFeedsLockID = 0x7466656564730003

// CreateCustomFeed validates and stores a new custom feed, enabled, named
// <CATEGORY>_<name>. The 31st custom feed is refused.
func (s *Store) CreateCustomFeed(ctx context.Context, in NewCustomFeed) (*Feed, error) {
	now := time.Now().UTC()
	f := &Feed{
		Type:             FeedCustom,
		Category:         in.Category,
		Enabled:          true,
		StatusMessage:    MessageInitializing,
		PollingFrequency: in.PollingFrequency,
		RetentionPeriod:  in.RetentionPeriod,
		BackfillDays:     in.BackfillDays,
		Description:      strings.TrimSpace(in.Description),
		CollectionURL:    strings.TrimSpace(in.CollectionURL),
		Username:         in.Username,
		Secret:           in.Secret,
		AllowRuleActions: in.AllowRuleActions,
		CreatedAt:        now,
		UpdatedAt:        now,
	}
	if err := checkNewCustomFeed(f, in.Name); err != nil {
		return nil, err
	}
	err := s.insertBounded(ctx, f, customFeedsLockID, MaxCustomFeeds,
		Invalid("", "an organisation may have at most %d custom feeds; delete one first", MaxCustomFeeds))
	if err != nil {
		return nil, err
	}
	return f, nil
}

// CheckCustomFeed reports every field of in that CreateCustomFeed would
// refuse, without storing anything, so that a caller with checks of its own
// (the source's) can report them all together.
func CheckCustomFeed(in NewCustomFeed) error {
	f := &Feed{Type: FeedCustom, Category: in.Category, PollingFrequency: in.PollingFrequency,
		RetentionPeriod: in.RetentionPeriod, BackfillDays: in.BackfillDays,
		Description: strings.TrimSpace(in.Description), CollectionURL: strings.TrimSpace(in.CollectionURL),
		Username: in.Username}
	return checkNewCustomFeed(f, in.Name)
}

// checkNewCustomFeed checks a custom feed's category, name and ranges
// together, and names f as stored (<CATEGORY>_<name>).
func checkNewCustomFeed(f *Feed, name string) error {
	var errs []error
	if f.Category != CategoryTAXII && f.Category != CategoryTSV {
		errs = append(errs, Invalid("category", "must be TAXII or TSV"))
	}
	stored, err := customFeedName(f.Category, name)
	if err != nil {
		errs = append(errs, err)
		f.Name = "-" // reported already; not again by validateFeed
	} else {
		f.Name = stored
	}
	if err := validateFeed(f); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CreateFeed stores a built-in or premium feed as given (after validation);
// the packages that define those feeds call it.
func (s *Store) CreateFeed(ctx context.Context, f *Feed) error {
	now := time.Now().UTC()
	f.CreatedAt, f.UpdatedAt = now, now
	if f.Type == FeedBuiltin {
		f.PollingFrequency = BuiltinPollingHours
	}
	if err := validateFeed(f); err != nil {
		return err
	}
	if _, err := s.DB.NewInsert().Model(f).Returning("id").Exec(ctx); err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("store: a feed named %q already exists: %w", f.Name, ErrConflict)
		}
		return fmt.Errorf("store: unable to create feed %q: %w", f.Name, err)
	}
	return nil
}

// premiumFeedsLockID serialises the creation of premium feeds of one kind
// on PostgreSQL so that two concurrent creates cannot both pass its bound.
const premiumFeedsLockID = 0x7466656564730004

// CreatePremiumFeed stores a new premium feed of a kind that allows several,
// refusing it when maxOfKind feeds of that kind exist already.
func (s *Store) CreatePremiumFeed(ctx context.Context, f *Feed, maxOfKind int) error {
	now := time.Now().UTC()
	f.Type, f.CreatedAt, f.UpdatedAt = FeedPremium, now, now
	name, err := premiumFeedName(f.Name)
	if err != nil {
		return err
	}
	f.Name = name
	if err := validateFeed(f); err != nil {
		return err
	}
	err = s.insertBounded(ctx, f, premiumFeedsLockID, maxOfKind,
		Invalid("", "at most %d feeds of this premium kind; delete or reuse one", maxOfKind))
	if errors.Is(err, ErrConflict) {
		return Invalid("name", "a feed named %q already exists", f.Name)
	}
	return err
}

// insertBounded stores f unless max feeds of its type and kind exist
// already, in which case it returns full. On PostgreSQL the count is taken
// under the advisory lock lockID, so two concurrent creates cannot both pass
// the bound. A name in use is ErrConflict.
func (s *Store) insertBounded(ctx context.Context, f *Feed, lockID int64, max int, full error) error {
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if s.Dialect == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", lockID); err != nil {
				return fmt.Errorf("store: unable to lock the %s feeds: %w", f.Type, err)
			}
		}
		n, err := tx.NewSelect().Model((*Feed)(nil)).Where("type = ? AND kind = ?", f.Type, f.Kind).Count(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to count the %s feeds: %w", f.Type, err)
		}
		if n >= int64(max) {
			return full
		}
		if _, err := tx.NewInsert().Model(f).Returning("id").Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("store: a feed named %q already exists: %w", f.Name, ErrConflict)
			}
			return fmt.Errorf("store: unable to create feed %q: %w", f.Name, err)
		}
		return nil
	})
}

// EnsureFeed creates f unless a feed of its type and kind exists: the
// built-in and premium feeds that the service delivers are created once, by
// whichever instance starts first.
func (s *Store) EnsureFeed(ctx context.Context, f *Feed) (created bool, err error) {
	n, err := s.DB.NewSelect().Model((*Feed)(nil)).Where("type = ? AND kind = ?", f.Type, f.Kind).Count(ctx)
	if err != nil {
		return false, fmt.Errorf("store: unable to look for the %s feed: %w", f.Kind, err)
	}
	if n > 0 {
		return false, nil
	}
	if err := s.CreateFeed(ctx, f); err != nil {
		if errors.Is(err, ErrConflict) {
			return false, nil // another instance created it meanwhile
		}
		return false, err
	}
	return true, nil
}

// FeedReset is the delivered state a premium feed returns to.
type FeedReset struct {
	Name             string
	Category         string
	Description      string
	PollingFrequency int
	RetentionPeriod  int
	BackfillDays     int
}

// ResetPremiumFeed returns a premium feed to its delivered state: disabled,
// without credentials, cursor, run state or run history, with the given
// settings; then it deletes the feed's sightings and the IoCs left without
// one. The feed is disabled first, in its own transaction, so nothing
// ingests while the sightings go (batches of a run still going on check
// that the feed is enabled, and the end of such a run finds its record
// gone); should a crash come in between, a second reset finishes.
func (s *Store) ResetPremiumFeed(ctx context.Context, id int64, to FeedReset) (*Feed, error) {
	var out *Feed
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		f, err := feedForUpdate(ctx, tx, s.Dialect, id)
		if err != nil {
			return err
		}
		if !f.Resettable() {
			return Invalid("id", "only premium feeds can be reset")
		}
		now := time.Now().UTC()
		f.Name, f.Category, f.Description = to.Name, to.Category, to.Description
		f.PollingFrequency, f.RetentionPeriod, f.BackfillDays = to.PollingFrequency, to.RetentionPeriod, to.BackfillDays
		f.Enabled, f.StatusMessage = false, MessageDisabled
		f.CollectionURL, f.Username, f.Secret, f.Cursor = "", "", nil, ""
		f.AllowRuleActions = false
		f.LastIngestion, f.LastRunAt, f.DisabledAt, f.UpdatedAt = nil, nil, nil, now
		if err := validateFeed(f); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model(f).WherePK().ExcludeColumn("id", "type", "kind", "created_at").Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return Invalid("name", "a feed named %q already exists", f.Name)
			}
			return fmt.Errorf("store: unable to reset feed %d: %w", id, err)
		}
		if _, err := tx.NewDelete().Model((*FeedRun)(nil)).Where("feed_id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to delete the runs of feed %d: %w", id, err)
		}
		out = f
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := s.DeleteFeedSightings(ctx, id); err != nil {
		return nil, fmt.Errorf("store: unable to delete the sightings of feed %d: %w", id, err)
	}
	return out, nil
}

// premiumFeedName checks a premium feed's whole stored name.
func premiumFeedName(name string) (string, error) {
	name = strings.TrimSpace(name)
	return name, checkFeedName(name)
}

// checkFeedName checks the name the user gave, without its prefix.
func checkFeedName(name string) error {
	switch {
	case name == "":
		return Invalid("name", "must not be empty")
	case utf8.RuneCountInString(name) > maxFeedNameLength:
		return Invalid("name", "must have at most %d characters", maxFeedNameLength)
	case strings.ContainsAny(name, "\t\r\n"):
		return Invalid("name", "must be on one line")
	}
	return nil
}

// customFeedName is "<CATEGORY>_<name>". A name that already carries the
// prefix (as the table shows it) is not prefixed twice.
func customFeedName(category, name string) (string, error) {
	name = strings.TrimPrefix(strings.TrimSpace(name), category+"_")
	if err := checkFeedName(name); err != nil {
		return "", err
	}
	return category + "_" + name, nil
}

// validateFeed checks the settings against the ranges of the feed's type,
// reporting every field out of its range at once (errors.Join).
func validateFeed(f *Feed) error {
	minPoll, maxPoll := 1, MaxCustomPollingHrs
	switch f.Type {
	case FeedBuiltin:
		minPoll, maxPoll = BuiltinPollingHours, BuiltinPollingHours
	case FeedPremium:
		maxPoll = MaxPremiumPollingHrs
	case FeedCustom:
	default:
		return Invalid("type", "must be builtin, custom or premium")
	}
	var errs []error
	if f.Name == "" {
		errs = append(errs, Invalid("name", "must not be empty"))
	}
	if f.PollingFrequency < minPoll || f.PollingFrequency > maxPoll {
		if minPoll == maxPoll {
			errs = append(errs, Invalid("pollingFrequency", "is fixed at %d hours for this feed", minPoll))
		} else {
			errs = append(errs, Invalid("pollingFrequency", "must be between %d and %d hours", minPoll, maxPoll))
		}
	}
	if f.RetentionPeriod < 1 || f.RetentionPeriod > MaxRetentionDays {
		errs = append(errs, Invalid("retentionPeriod", "must be between 1 and %d days", MaxRetentionDays))
	}
	switch {
	case f.BackfillDays < 0 || f.BackfillDays > MaxBackfillDays:
		errs = append(errs, Invalid("backfillDays", "must be between 0 and %d days", MaxBackfillDays))
	case f.Type == FeedCustom && f.Category == CategoryTSV && f.BackfillDays != 0:
		errs = append(errs, Invalid("backfillDays", "is not available for TSV feeds"))
	}
	if utf8.RuneCountInString(f.Description) > maxDescriptionLength {
		errs = append(errs, Invalid("description", "must have at most %d characters", maxDescriptionLength))
	}
	if len(f.Username) > maxUsernameLength {
		errs = append(errs, Invalid("username", "must have at most %d characters", maxUsernameLength))
	}
	switch {
	case len(f.CollectionURL) > maxURLLength:
		errs = append(errs, Invalid("collectionUrl", "must have at most %d characters", maxURLLength))
	case f.Type == FeedCustom && f.CollectionURL == "":
		errs = append(errs, Invalid("collectionUrl", "must not be empty"))
	}
	return errors.Join(errs...)
}

// FeedPatch holds the fields of an update; nil fields keep their value.
// Secret points to the new sealed secret (nil inside clears it).
type FeedPatch struct {
	Name *string // a custom feed's name, stored with its category prefix
	// StoredName is a premium feed's whole name, for the kinds whose name
	// the user may change (the caller checks the kind's rules).
	StoredName *string
	// Category of a premium feed (the caller checks the kind's rules); a
	// custom feed's category never changes.
	Category         *string
	CollectionURL    *string
	Username         *string
	Secret           *[]byte
	PollingFrequency *int
	RetentionPeriod  *int
	BackfillDays     *int
	Description      *string
	AllowRuleActions *bool
}

// UpdateFeed applies the given fields, enforcing the spec's action rules
// (built-in feeds cannot be edited; premium names and descriptions are
// read-only; the category never changes). It returns the feed before and
// after, so the caller can tell what changed.
func (s *Store) UpdateFeed(ctx context.Context, id int64, p FeedPatch) (before, after *Feed, err error) {
	err = s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		f, err := feedForUpdate(ctx, tx, s.Dialect, id)
		if err != nil {
			return err
		}
		old := *f
		before = &old
		if !f.Editable() {
			return Invalid("id", "built-in feeds cannot be edited")
		}
		if f.Type == FeedPremium && (p.Name != nil || p.Description != nil) {
			field := "name"
			if p.Name == nil {
				field = "description"
			}
			return Invalid(field, "is read-only for premium feeds")
		}
		if f.Type != FeedPremium && (p.StoredName != nil || p.Category != nil) {
			if p.Category != nil {
				return Invalid("category", "cannot be changed after creation")
			}
			return Invalid("name", "is stored with the category prefix")
		}
		if p.StoredName != nil {
			if f.Name, err = premiumFeedName(*p.StoredName); err != nil {
				return err
			}
		}
		if p.Category != nil {
			f.Category = *p.Category
		}
		if p.Name != nil {
			if f.Name, err = customFeedName(f.Category, *p.Name); err != nil {
				return err
			}
		}
		if p.CollectionURL != nil {
			f.CollectionURL = strings.TrimSpace(*p.CollectionURL)
		}
		if p.Username != nil {
			f.Username = *p.Username
		}
		if p.Secret != nil {
			f.Secret = *p.Secret
		}
		if p.PollingFrequency != nil {
			f.PollingFrequency = *p.PollingFrequency
		}
		if p.RetentionPeriod != nil {
			f.RetentionPeriod = *p.RetentionPeriod
		}
		if p.BackfillDays != nil {
			f.BackfillDays = *p.BackfillDays
		}
		if p.Description != nil {
			f.Description = strings.TrimSpace(*p.Description)
		}
		if p.AllowRuleActions != nil {
			f.AllowRuleActions = *p.AllowRuleActions
		}
		if err := validateFeed(f); err != nil {
			return err
		}
		f.UpdatedAt = time.Now().UTC()
		if _, err := tx.NewUpdate().Model(f).WherePK().
			Column("name", "category", "collection_url", "username", "secret", "polling_frequency",
				"retention_period", "backfill_days", "description", "allow_rule_actions", "updated_at").Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("store: a feed named %q already exists: %w", f.Name, ErrConflict)
			}
			return fmt.Errorf("store: unable to update feed %d: %w", id, err)
		}
		after = f
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

// feedForUpdate reads a feed inside tx, locking its row on PostgreSQL.
func feedForUpdate(ctx context.Context, tx bun.Tx, d Dialect, id int64) (*Feed, error) {
	f := new(Feed)
	q := tx.NewSelect().Model(f).Where("id = ?", id)
	if d == Postgres {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("store: feed %d: %w", id, ErrNotFound)
		}
		return nil, fmt.Errorf("store: unable to read feed %d: %w", id, err)
	}
	return f, nil
}

// Feed returns the feed with the given id.
func (s *Store) Feed(ctx context.Context, id int64) (*Feed, error) {
	f := new(Feed)
	if err := s.DB.NewSelect().Model(f).Where("id = ?", id).Scan(ctx); err != nil {
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
	if err := s.DB.NewSelect().Model(&feeds).Where("id IN (?)", bun.In(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read feeds: %w", err)
	}
	return feeds, nil
}

// EnabledFeeds lists the feeds that should be scheduled.
func (s *Store) EnabledFeeds(ctx context.Context) ([]Feed, error) {
	var feeds []Feed
	if err := s.DB.NewSelect().Model(&feeds).Where("enabled").Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to list enabled feeds: %w", err)
	}
	return feeds, nil
}

// DeleteFeed removes a custom feed, its sightings, the IoCs left without a
// sighting, and its runs. Other feeds cannot be deleted.
func (s *Store) DeleteFeed(ctx context.Context, id int64) error {
	f, err := s.Feed(ctx, id)
	if err != nil {
		return err
	}
	if !f.Deletable() {
		return Invalid("id", "only custom feeds can be deleted")
	}
	// Disabled first: a run of the feed going on in another instance then
	// writes no more batches (each checks that its feed is enabled), so no
	// sighting comes in while the feed's go.
	if _, err := s.SetFeedEnabled(ctx, id, false); err != nil {
		return fmt.Errorf("store: unable to disable feed %d before deleting it: %w", id, err)
	}
	// Sightings go next, in batches, so that the IoC aggregates stay
	// right; a crash in between leaves the feed in place to delete again.
	if _, err := s.DeleteFeedSightings(ctx, id); err != nil {
		return fmt.Errorf("store: unable to delete the sightings of feed %d: %w", id, err)
	}
	res, err := s.DB.NewDelete().Model((*Feed)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to delete feed %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: feed %d: %w", id, ErrNotFound)
	}
	return nil
}

// SetFeedEnabled turns a feed on or off. Disabling shows Disabled and
// remembers when; enabling shows what the last finished run left, or
// Initializing for a feed that never ran.
func (s *Store) SetFeedEnabled(ctx context.Context, id int64, enabled bool) (*Feed, error) {
	var out *Feed
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		f, err := feedForUpdate(ctx, tx, s.Dialect, id)
		if err != nil {
			return err
		}
		if f.Enabled == enabled {
			out = f
			return nil
		}
		now := time.Now().UTC()
		f.Enabled, f.UpdatedAt = enabled, now
		if enabled {
			f.StatusMessage = MessageInitializing
			var last FeedRun
			err := tx.NewSelect().Model(&last).Where("feed_id = ? AND ended_at IS NOT NULL", id).
				Order("started_at DESC", "id DESC").Limit(1).Scan(ctx)
			switch {
			case err == nil && last.ErrorKind != "":
				f.StatusMessage = last.ErrorKind
			case err == nil:
				f.StatusMessage = f.SuccessMessage()
			case !errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("store: unable to read the last run of feed %d: %w", id, err)
			}
		} else {
			f.StatusMessage = MessageDisabled
			f.DisabledAt = &now
		}
		if _, err := tx.NewUpdate().Model(f).WherePK().
			Column("enabled", "status_message", "disabled_at", "updated_at").Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to update feed %d: %w", id, err)
		}
		out = f
		return nil
	})
	return out, err
}

// SetFeedMessage sets the status message of an enabled feed; a disabled
// feed keeps Disabled.
func (s *Store) SetFeedMessage(ctx context.Context, id int64, msg string) error {
	_, err := s.DB.NewUpdate().Model((*Feed)(nil)).
		Set("status_message = ?", msg).Set("updated_at = ?", time.Now().UTC()).
		Where("id = ? AND enabled", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to set the status of feed %d: %w", id, err)
	}
	return nil
}

// ResetFeedCursor forgets where the feed's source resumes from.
func (s *Store) ResetFeedCursor(ctx context.Context, id int64) (*Feed, error) {
	res, err := s.DB.NewUpdate().Model((*Feed)(nil)).
		Set("cursor = ''").Set("updated_at = ?", time.Now().UTC()).
		Where("id = ?", id).Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: unable to reset the cursor of feed %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, fmt.Errorf("store: feed %d: %w", id, ErrNotFound)
	}
	return s.Feed(ctx, id)
}

// StartRun records the start of a run. The first run of a feed (one that
// never finished a run) shows Initializing, in the same transaction. A feed
// that is gone is ErrNotFound.
func (s *Store) StartRun(ctx context.Context, feedID int64, now time.Time) (*FeedRun, error) {
	run := &FeedRun{FeedID: feedID, StartedAt: now.UTC(), Rejections: []Rejection{}}
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// Locked first, as FinishRun and batches lock it; a feed deleted
		// meanwhile (on another instance) is not found rather than a
		// broken foreign key.
		if _, err := feedForUpdate(ctx, tx, s.Dialect, feedID); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(run).Returning("id").Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to start a run of feed %d: %w", feedID, err)
		}
		_, err := tx.NewUpdate().Model((*Feed)(nil)).
			Set("status_message = ?", MessageInitializing).
			Where("id = ? AND enabled AND last_run_at IS NULL", feedID).Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to mark feed %d initializing: %w", feedID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return run, nil
}

// FinishRun records the end of run and, in the same transaction, the feed
// state it leaves: the status message (unless the feed was disabled
// meanwhile), the last run time, and the last ingestion when it stored
// anything. Only the feed's newest run sets its state: closing an older run
// (one whose instance died, closed after a newer run) leaves the feed as
// the newer run made it. A run already closed (by an instance that found its
// owner gone) or erased (by a reset) is not changed: FinishRun returns the
// feed as it is, with ErrRunClosed.
func (s *Store) FinishRun(ctx context.Context, run *FeedRun, message string) (*Feed, error) {
	end := time.Now().UTC()
	if run.EndedAt == nil {
		run.EndedAt = &end
	}
	if run.Rejections == nil {
		run.Rejections = []Rejection{}
	}
	if len(run.Rejections) > MaxRejections {
		run.Rejections = run.Rejections[:MaxRejections]
	}
	var out *Feed
	closed := false
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// The feed's row is locked first, as a batch and a reset lock it,
		// so that they never wait on each other in opposite orders.
		f, err := feedForUpdate(ctx, tx, s.Dialect, run.FeedID)
		if err != nil {
			return err
		}
		out = f
		res, err := tx.NewUpdate().Model(run).WherePK().Where("ended_at IS NULL").
			Column("ended_at", "fetched", "stored", "added", "rejected", "rejections", "error_kind", "error_detail", "note",
				"backlog_written", "backlog_total", "expected_completion").
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to finish run %d: %w", run.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			closed = true
			return nil
		}
		newer, err := tx.NewSelect().Model((*FeedRun)(nil)).
			Where("feed_id = ? AND id > ?", run.FeedID, run.ID).Exists(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to look for runs of feed %d after run %d: %w", run.FeedID, run.ID, err)
		}
		if newer {
			return nil
		}
		f.LastRunAt = run.EndedAt
		if f.Enabled {
			f.StatusMessage = message
		}
		if run.Stored > 0 {
			f.LastIngestion = run.EndedAt
		}
		f.UpdatedAt = end
		if _, err := tx.NewUpdate().Model(f).WherePK().
			Column("status_message", "last_run_at", "last_ingestion", "updated_at").Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to update feed %d after run %d: %w", f.ID, run.ID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if closed {
		return out, fmt.Errorf("store: run %d of feed %d: %w", run.ID, run.FeedID, ErrRunClosed)
	}
	return out, nil
}

// UpdateRunProgress saves a running run's counters, so that a crash still
// leaves them and the daily limit counts what was stored.
func (s *Store) UpdateRunProgress(ctx context.Context, run *FeedRun) error {
	if run.Rejections == nil {
		run.Rejections = []Rejection{}
	}
	_, err := s.DB.NewUpdate().Model(run).WherePK().
		Column("fetched", "stored", "added", "rejected", "rejections").Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to save the progress of run %d: %w", run.ID, err)
	}
	return nil
}

// UnfinishedRuns lists runs that have no end: runs going on in another
// instance, or runs a crash interrupted.
func (s *Store) UnfinishedRuns(ctx context.Context) ([]FeedRun, error) {
	var runs []FeedRun
	if err := s.DB.NewSelect().Model(&runs).Where("ended_at IS NULL").Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to list unfinished runs: %w", err)
	}
	return runs, nil
}

// FeedRuns lists a feed's runs, newest first.
func (s *Store) FeedRuns(ctx context.Context, feedID int64, limit int) ([]FeedRun, error) {
	var runs []FeedRun
	err := s.DB.NewSelect().Model(&runs).Where("feed_id = ?", feedID).
		Order("started_at DESC", "id DESC").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: unable to list the runs of feed %d: %w", feedID, err)
	}
	return runs, nil
}

// LastRun returns the feed's newest run, or ErrNotFound when it never ran.
func (s *Store) LastRun(ctx context.Context, feedID int64) (*FeedRun, error) {
	runs, err := s.FeedRuns(ctx, feedID, 1)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("store: runs of feed %d: %w", feedID, ErrNotFound)
	}
	return &runs[0], nil
}

// PruneFeedRuns deletes the records of runs that ended before cutoff,
// keeping each feed's newest keep runs whatever their age, so that the run
// history does not grow without bound and every feed still shows its
// latest runs.
func (s *Store) PruneFeedRuns(ctx context.Context, cutoff time.Time, keep int) (int64, error) {
	res, err := s.DB.ExecContext(ctx, `DELETE FROM feed_runs WHERE ended_at < ? AND id NOT IN (
		SELECT recent.id FROM feed_runs AS recent WHERE recent.feed_id = feed_runs.feed_id
		ORDER BY recent.started_at DESC, recent.id DESC LIMIT ?)`, cutoff.UTC(), keep)
	if err != nil {
		return 0, fmt.Errorf("store: unable to prune old feed runs: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// AddedSince sums the sightings new to the feed that its runs started at or
// after since stored; the daily ingestion limit is counted with it, so that
// re-reporting what the feed already has (an unchanged file run again) uses
// none of it.
func (s *Store) AddedSince(ctx context.Context, feedID int64, since time.Time) (int64, error) {
	var n sql.NullInt64
	err := s.DB.NewSelect().Model((*FeedRun)(nil)).ColumnExpr("SUM(added)").
		Where("feed_id = ? AND started_at >= ?", feedID, since.UTC()).Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("store: unable to count what feed %d added: %w", feedID, err)
	}
	return n.Int64, nil
}

// FeedFilter narrows a feed listing. Each list matches any of its values;
// the lists combine with AND. Empty lists do not filter.
type FeedFilter struct {
	Names              []string
	Types              []FeedType
	Statuses           []FeedStatus
	StatusMessages     []string
	Enabled            []bool
	PollingFrequencies []int
	RetentionPeriods   []int
	BackfillDays       []int
	Descriptions       []string
	LastIngestionFrom  *time.Time
	LastIngestionTo    *time.Time
}

// FeedOrderField names a sortable column of the feeds table.
type FeedOrderField string

// The sortable columns.
const (
	OrderFeedName             FeedOrderField = "name"
	OrderFeedType             FeedOrderField = "type"
	OrderFeedStatus           FeedOrderField = "status"
	OrderFeedStatusMessage    FeedOrderField = "status_message"
	OrderFeedEnabled          FeedOrderField = "enabled"
	OrderFeedPollingFrequency FeedOrderField = "polling_frequency"
	OrderFeedRetentionPeriod  FeedOrderField = "retention_period"
	OrderFeedBackfillDays     FeedOrderField = "backfill_days"
	OrderFeedDescription      FeedOrderField = "description"
	OrderFeedLastIngestion    FeedOrderField = "last_ingestion"
)

// FeedQuery is one page of the feeds table.
type FeedQuery struct {
	Search string
	Filter FeedFilter
	Order  FeedOrderField // name when empty
	Desc   bool
	Offset int
	Limit  int
}

// feedStatusExpr derives FeedStatus in SQL, like Feed.DerivedStatus.
func feedStatusExpr() string {
	msgs := []string{MessageStopped}
	for _, k := range []ioc.FailureKind{ioc.InvalidCredentials, ioc.InvalidURL, ioc.InvalidCollectionURL,
		ioc.ConnectionError, ioc.FetchingDataError, ioc.SurpassedQueryLimit, ioc.FailedToConnect} {
		msgs = append(msgs, string(k))
	}
	return "CASE WHEN NOT enabled THEN 'disabled' WHEN status_message IN ('" +
		strings.Join(msgs, "', '") + "') THEN 'error' ELSE 'success' END"
}

// FeedSearchColumns are the text columns the free-text search looks in.
var FeedSearchColumns = []string{"name", "type", "category", "status_message", "description", "collection_url", "username"}

// ApplyFeedFilter adds the search and the filter to q (a select on feeds).
// The facets of the feeds table use it too.
func ApplyFeedFilter(q *bun.SelectQuery, search string, f FeedFilter) *bun.SelectQuery {
	if search = strings.TrimSpace(search); search != "" {
		pattern := "%" + likeEscaper.Replace(strings.ToLower(search)) + "%"
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			for _, col := range FeedSearchColumns {
				q = q.WhereOr("LOWER(?) LIKE ? ESCAPE '\\'", bun.Ident(col), pattern)
			}
			return q
		})
	}
	if len(f.Names) > 0 {
		q = q.Where("name IN (?)", bun.In(f.Names))
	}
	if len(f.Types) > 0 {
		q = q.Where("type IN (?)", bun.In(f.Types))
	}
	if len(f.Statuses) > 0 {
		q = q.Where(feedStatusExpr()+" IN (?)", bun.In(f.Statuses))
	}
	if len(f.StatusMessages) > 0 {
		q = q.Where("status_message IN (?)", bun.In(f.StatusMessages))
	}
	if len(f.Enabled) == 1 {
		if f.Enabled[0] {
			q = q.Where("enabled")
		} else {
			q = q.Where("NOT enabled")
		}
	}
	if len(f.PollingFrequencies) > 0 {
		q = q.Where("polling_frequency IN (?)", bun.In(f.PollingFrequencies))
	}
	if len(f.RetentionPeriods) > 0 {
		q = q.Where("retention_period IN (?)", bun.In(f.RetentionPeriods))
	}
	if len(f.BackfillDays) > 0 {
		q = q.Where("backfill_days IN (?)", bun.In(f.BackfillDays))
	}
	if len(f.Descriptions) > 0 {
		q = q.Where("description IN (?)", bun.In(f.Descriptions))
	}
	if f.LastIngestionFrom != nil {
		q = q.Where("last_ingestion >= ?", f.LastIngestionFrom.UTC())
	}
	if f.LastIngestionTo != nil {
		q = q.Where("last_ingestion <= ?", f.LastIngestionTo.UTC())
	}
	return q
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// Feeds returns one page of feeds and how many match in all.
func (s *Store) Feeds(ctx context.Context, fq FeedQuery) ([]Feed, int, error) {
	var feeds []Feed
	q := ApplyFeedFilter(s.DB.NewSelect().Model(&feeds), fq.Search, fq.Filter)
	dir := " ASC"
	if fq.Desc {
		dir = " DESC"
	}
	switch fq.Order {
	case "", OrderFeedName:
		q = q.OrderExpr("name" + dir)
	case OrderFeedStatus:
		q = q.OrderExpr(feedStatusExpr() + dir)
	case OrderFeedLastIngestion:
		// Never-ingested feeds last in both directions and on both dialects.
		q = q.OrderExpr("CASE WHEN last_ingestion IS NULL THEN 1 ELSE 0 END").OrderExpr("last_ingestion" + dir)
	case OrderFeedType, OrderFeedStatusMessage, OrderFeedEnabled, OrderFeedPollingFrequency,
		OrderFeedRetentionPeriod, OrderFeedBackfillDays, OrderFeedDescription:
		q = q.OrderExpr(string(fq.Order) + dir)
	default:
		return nil, 0, Invalid("orderBy", "cannot sort on %q", fq.Order)
	}
	q = q.OrderExpr("id ASC")
	if fq.Limit > 0 {
		q = q.Limit(int64(fq.Limit))
	}
	q = q.Offset(int64(fq.Offset))
	total, err := q.ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("store: unable to list feeds: %w", err)
	}
	return feeds, int(total), nil
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
