package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/store"
)

// CustomFeedInput is a new custom feed as the user enters it, password in
// clear (it is sealed before it is stored).
type CustomFeedInput struct {
	Category         string
	Name             string
	CollectionURL    string
	Username         string
	Password         string
	PollingFrequency int
	RetentionPeriod  int
	BackfillDays     int
	Description      string
	AllowRuleActions bool
}

// FeedUpdate holds the fields to change; nil fields keep their value. An
// empty Password clears the password.
type FeedUpdate struct {
	Name             *string
	CollectionURL    *string
	Username         *string
	Password         *string
	PollingFrequency *int
	RetentionPeriod  *int
	BackfillDays     *int
	Description      *string
	// AllowRuleActions is tifeeds' own setting, not the source's: premium
	// feeds take it whatever their kind edits.
	AllowRuleActions *bool

	// Settings of premium kinds (see ingest/premium); custom feeds refuse
	// them. An empty APIKey or ClientSecret clears it.
	APIKey       *string
	ClientID     *string
	ClientSecret *string
	APIEndpoint  *string // a feed-list endpoint carrying its key
	Category     *string
}

// CreateCustomFeed checks the feed with its category's validation, stores
// it enabled and runs it at once.
func (r *Runner) CreateCustomFeed(ctx context.Context, in CustomFeedInput) (*store.Feed, error) {
	if !r.sources.Has(in.Category) {
		return nil, store.Invalid("category", "%s feeds are not available in this build", in.Category)
	}
	fields := store.NewCustomFeed{
		Category: in.Category, Name: in.Name, CollectionURL: in.CollectionURL, Username: in.Username,
		PollingFrequency: in.PollingFrequency, RetentionPeriod: in.RetentionPeriod,
		BackfillDays: in.BackfillDays, Description: in.Description, AllowRuleActions: in.AllowRuleActions,
	}
	// The source's check and the store's together: the form learns of every
	// invalid field at once.
	sourceErr := r.sources.Validate(ctx, in.Category, source.Feed{URL: in.CollectionURL, Username: in.Username,
		Password: in.Password})
	if err := errors.Join(sourceErr, store.CheckCustomFeed(fields)); err != nil {
		return nil, err
	}
	secret, err := r.secrets.Seal(in.Password)
	if err != nil {
		return nil, err
	}
	fields.Secret = secret
	f, err := r.st.CreateCustomFeed(ctx, fields)
	if err != nil {
		return nil, err
	}
	r.log.Info("Created feed", "feed_id", f.ID, "name", f.Name)
	r.bus.publishFeed(f)
	if err := r.scheduleDue(f, true); err != nil {
		return nil, err
	}
	return f, nil
}

// UpdateFeed changes the given fields. A new collection URL or new
// credentials are checked by the category's validation; a new URL also
// forgets the cursor (it pointed into another source). A new polling
// frequency reschedules the feed's job. Premium feeds take the settings of
// their kind only.
func (r *Runner) UpdateFeed(ctx context.Context, id int64, in FeedUpdate) (*store.Feed, error) {
	cur, err := r.st.Feed(ctx, id)
	if err != nil {
		return nil, err
	}
	if !cur.Editable() {
		return nil, store.Invalid("id", "built-in feeds cannot be edited")
	}
	if cur.Type == store.FeedPremium {
		return r.updatePremium(ctx, cur, in)
	}
	for _, premiumOnly := range []struct {
		name  string
		given bool
	}{{"apiKey", in.APIKey != nil}, {"clientId", in.ClientID != nil},
		{"clientSecret", in.ClientSecret != nil}, {"apiEndpoint", in.APIEndpoint != nil}} {
		if premiumOnly.given {
			return nil, store.Invalid(premiumOnly.name, "is a setting of premium feeds only")
		}
	}
	if in.Category != nil && *in.Category != cur.Category {
		return nil, store.Invalid("category", "cannot be changed after creation")
	}
	patch := store.FeedPatch{Name: in.Name, CollectionURL: in.CollectionURL, Username: in.Username,
		PollingFrequency: in.PollingFrequency, RetentionPeriod: in.RetentionPeriod,
		BackfillDays: in.BackfillDays, Description: in.Description, AllowRuleActions: in.AllowRuleActions}
	if in.CollectionURL != nil || in.Username != nil || in.Password != nil {
		if err := r.validateSource(ctx, cur, in); err != nil {
			return nil, err
		}
	}
	if in.Password != nil {
		secret, err := r.secrets.Seal(*in.Password)
		if err != nil {
			return nil, err
		}
		patch.Secret = &secret
	}
	return r.applyUpdate(ctx, id, patch)
}

// validateSource checks the connection settings cur would have after in
// with the source's validation (a TAXII collection URL against its server).
// A feed without a URL yet (a premium feed being configured) is not checked.
func (r *Runner) validateSource(ctx context.Context, cur *store.Feed, in FeedUpdate) error {
	cfg := source.Feed{URL: cur.CollectionURL, Username: cur.Username}
	if in.CollectionURL != nil {
		cfg.URL = *in.CollectionURL
	}
	if in.Username != nil {
		cfg.Username = *in.Username
	}
	if in.Password != nil {
		cfg.Password = *in.Password
	} else {
		var err error
		if cfg.Password, err = r.secrets.Open(cur.Secret); err != nil {
			return err
		}
	}
	if cfg.URL == "" && cur.Type == store.FeedPremium {
		return nil
	}
	return r.sources.Validate(ctx, SourceKey(cur), cfg)
}

// applyUpdate stores patch and follows it: a new URL forgets the cursor, a
// new polling frequency reschedules the feed, new connection settings run
// it at once.
func (r *Runner) applyUpdate(ctx context.Context, id int64, patch store.FeedPatch) (*store.Feed, error) {
	before, after, err := r.st.UpdateFeed(ctx, id, patch)
	if err != nil {
		return nil, err
	}
	if before.CollectionURL != after.CollectionURL && after.Cursor != "" {
		if after, err = r.st.ResetFeedCursor(ctx, id); err != nil {
			return nil, err
		}
	}
	if after.Enabled && before.PollingFrequency != after.PollingFrequency {
		if err := r.scheduleDue(after, false); err != nil {
			return nil, err
		}
	}
	r.bus.publishFeed(after)
	if connectionChanged(before, after) {
		r.runAfterFix(after)
	}
	return after, nil
}

// connectionChanged reports whether an update touched what the feed's
// source connects with: its URL, category, username or secret (saved anew,
// even when the same, since a sealed secret cannot be compared).
func connectionChanged(before, after *store.Feed) bool {
	return before.CollectionURL != after.CollectionURL || before.Category != after.Category ||
		before.Username != after.Username || !bytes.Equal(before.Secret, after.Secret)
}

// DeleteFeed cancels the feed's run, unschedules it and deletes it with its
// sightings and the IoCs left without one. Only custom feeds can be deleted.
func (r *Runner) DeleteFeed(ctx context.Context, id int64) error {
	f, err := r.st.Feed(ctx, id)
	if err != nil {
		return err
	}
	if !f.Deletable() {
		return store.Invalid("id", "only custom feeds can be deleted")
	}
	r.unschedule(id)
	// Disabled first and announced, so that a run of it on another instance
	// stops at once, not after the deletion of its sightings.
	if off, err := r.st.SetFeedEnabled(ctx, id, false); err != nil {
		return err
	} else if f.Enabled {
		r.bus.publishFeed(off)
	}
	r.cancelRun(id, errDeleted)
	if err := r.st.DeleteFeed(ctx, id); err != nil {
		return err
	}
	r.log.Info("Deleted feed", "feed_id", id, "name", f.Name)
	r.bus.Publish(Event{FeedID: id, Deleted: true})
	return nil
}

// SetEnabled turns a feed on or off. Disabling needs confirm: it stops
// ingestion and cancels a run in flight. Enabling runs the feed at once,
// fetching what was missed since it was disabled (bounded by its backfill
// days, for sources that select by date).
func (r *Runner) SetEnabled(ctx context.Context, id int64, enabled, confirm bool) (*store.Feed, error) {
	if !enabled && !confirm {
		return nil, store.Invalid("confirm", "disabling a feed stops its ingestion: confirm with confirm: true")
	}
	before, err := r.st.Feed(ctx, id)
	if err != nil {
		return nil, err
	}
	if enabled && !before.Enabled && before.Type == store.FeedPremium {
		if err := r.checkEnablePremium(before); err != nil {
			return nil, err
		}
	}
	f, err := r.st.SetFeedEnabled(ctx, id, enabled)
	if err != nil {
		return nil, err
	}
	if before.Enabled == enabled {
		return f, nil
	}
	if enabled {
		r.log.Info("Enabled feed", "feed_id", id)
		r.bus.publishFeed(f)
		if err := r.scheduleDue(f, true); err != nil {
			return nil, err
		}
		return f, nil
	}
	r.log.Info("Disabled feed", "feed_id", id)
	r.unschedule(id)
	r.cancelRun(id, errDisabled)
	if f, err = r.st.Feed(ctx, id); err != nil {
		return nil, err
	}
	r.bus.publishFeed(f)
	return f, nil
}

// ErrAlreadyRunning is RunNow's answer for a feed with a run in flight.
var ErrAlreadyRunning = errors.New("the feed is already running; its run goes on")

// RunNow starts a run of an enabled feed at once and returns the feed as it
// is when the run has been queued. A feed with a run in flight, here or on
// another instance (its run is open in the store, or its lock is held), is
// not run twice: ErrAlreadyRunning; of instances asked at the same moment,
// one starts the run. A run whose end is committed no longer counts, even
// while the runner is letting go of the feed: the new run then starts as
// soon as it has.
func (r *Runner) RunNow(ctx context.Context, id int64) (*store.Feed, error) {
	f, err := r.st.Feed(ctx, id)
	if err != nil {
		return nil, err
	}
	if !f.Enabled {
		return nil, store.Invalid("id", "the feed is disabled: enable it to run it")
	}
	last, err := r.st.LastRun(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if last != nil && last.EndedAt == nil {
		return nil, ErrAlreadyRunning
	}
	answer, err := r.startNow(ctx, id)
	if err != nil {
		return nil, err
	}
	switch answer {
	case runRefused:
		return nil, fmt.Errorf("ingest: unable to run feed %d: %w", id, ErrRunnerStopped)
	case runBusy:
		return nil, ErrAlreadyRunning
	}
	return f, nil
}

// runAfterFix runs an enabled feed whose connection settings changed, so
// that corrected credentials show their effect at once rather than after a
// polling interval. A run in flight with the old settings finishes first.
func (r *Runner) runAfterFix(f *store.Feed) {
	if f.Enabled {
		r.askRun(f.ID, runAsked, true)
	}
}

// ResetCursor forgets where the feed's source resumes from.
func (r *Runner) ResetCursor(ctx context.Context, id int64) (*store.Feed, error) {
	f, err := r.st.ResetFeedCursor(ctx, id)
	if err != nil {
		return nil, err
	}
	r.bus.publishFeed(f)
	return f, nil
}
