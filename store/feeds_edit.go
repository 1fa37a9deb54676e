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
)

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
	n, err := s.reader().NewSelect().Model((*Feed)(nil)).Where("type = ? AND kind = ?", f.Type, f.Kind).Count(ctx)
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
