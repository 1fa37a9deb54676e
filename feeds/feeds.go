package feeds

import (
	"bytes"
	"context"
	"errors"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/events"
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
func (s *Service) CreateCustomFeed(ctx context.Context, in CustomFeedInput) (*store.Feed, error) {
	if !s.sources.Has(in.Category) {
		return nil, store.Invalid("category", "%s feeds are not available in this build", in.Category)
	}
	fields := store.NewCustomFeed{
		Category: in.Category, Name: in.Name, CollectionURL: in.CollectionURL, Username: in.Username,
		PollingFrequency: in.PollingFrequency, RetentionPeriod: in.RetentionPeriod,
		BackfillDays: in.BackfillDays, Description: in.Description, AllowRuleActions: in.AllowRuleActions,
	}
	// The source's check and the store's together: the form learns of every
	// invalid field at once.
	sourceErr := s.sources.Validate(ctx, in.Category, source.Feed{URL: in.CollectionURL, Username: in.Username,
		Password: in.Password})
	if err := errors.Join(sourceErr, store.CheckCustomFeed(fields)); err != nil {
		return nil, err
	}
	secret, err := s.secrets.Seal(in.Password)
	if err != nil {
		return nil, err
	}
	fields.Secret = secret
	f, err := s.st.CreateCustomFeed(ctx, fields)
	if err != nil {
		return nil, err
	}
	s.log.Info("Created feed", "feed_id", f.ID, "name", f.Name)
	s.record(ctx, audit.FeedCreate, f, audit.Fields(in))
	s.bus.PublishFeed(f)
	if err := s.runner.Schedule(f, true); err != nil {
		return nil, err
	}
	return f, nil
}

// UpdateFeed changes the given fields. A new collection URL or new
// credentials are checked by the category's validation; a new URL also
// forgets the cursor (it pointed into another source). A new polling
// frequency reschedules the feed's job. Premium feeds take the settings of
// their kind only.
func (s *Service) UpdateFeed(ctx context.Context, id int64, in FeedUpdate) (*store.Feed, error) {
	f, err := s.updateFeed(ctx, id, in)
	if err != nil {
		return nil, err
	}
	s.record(ctx, audit.FeedUpdate, f, audit.Fields(in))
	return f, nil
}

func (s *Service) updateFeed(ctx context.Context, id int64, in FeedUpdate) (*store.Feed, error) {
	cur, err := s.st.Feed(ctx, id)
	if err != nil {
		return nil, err
	}
	if !cur.Editable() {
		return nil, store.Invalid("id", "built-in feeds cannot be edited")
	}
	if cur.Type == store.FeedPremium {
		return s.updatePremium(ctx, cur, in)
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
		if err := s.validateSource(ctx, cur, in); err != nil {
			return nil, err
		}
	}
	if in.Password != nil {
		secret, err := s.secrets.Seal(*in.Password)
		if err != nil {
			return nil, err
		}
		patch.Secret = &secret
	}
	return s.applyUpdate(ctx, id, patch)
}

// validateSource checks the connection settings cur would have after in
// with the source's validation (a TAXII collection URL against its server).
// A feed without a URL yet (a premium feed being configured) is not checked.
func (s *Service) validateSource(ctx context.Context, cur *store.Feed, in FeedUpdate) error {
	url, username := cur.CollectionURL, cur.Username
	if in.CollectionURL != nil {
		url = *in.CollectionURL
	}
	if in.Username != nil {
		username = *in.Username
	}
	var password string
	if in.Password != nil {
		password = *in.Password
	} else {
		var err error
		if password, err = s.secrets.Open(cur.Secret); err != nil {
			return err
		}
	}
	if url == "" && cur.Type == store.FeedPremium {
		return nil
	}
	return s.sources.Validate(ctx, cur.SourceKey(), source.Feed{URL: url, Username: username, Password: password})
}

// applyUpdate stores patch and follows it: a new URL forgets the cursor, a
// new polling frequency reschedules the feed, new connection settings run
// it at once.
func (s *Service) applyUpdate(ctx context.Context, id int64, patch store.FeedPatch) (*store.Feed, error) {
	before, after, err := s.st.UpdateFeed(ctx, id, patch)
	if err != nil {
		return nil, err
	}
	if before.CollectionURL != after.CollectionURL && after.Cursor != "" {
		if after, err = s.st.ResetFeedCursor(ctx, id); err != nil {
			return nil, err
		}
	}
	if after.Enabled && before.PollingFrequency != after.PollingFrequency {
		if err := s.runner.Schedule(after, false); err != nil {
			return nil, err
		}
	}
	s.bus.PublishFeed(after)
	if connectionChanged(before, after) {
		s.runAfterFix(after)
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
func (s *Service) DeleteFeed(ctx context.Context, id int64) error {
	f, err := s.st.Feed(ctx, id)
	if err != nil {
		return err
	}
	if !f.Deletable() {
		return store.Invalid("id", "only custom feeds can be deleted")
	}
	s.runner.Unschedule(id)
	// Disabled first and announced, so that a run of it on another instance
	// stops at once, not after the deletion of its sightings.
	if off, err := s.st.SetFeedEnabled(ctx, id, false); err != nil {
		return err
	} else if f.Enabled {
		s.bus.PublishFeed(off)
	}
	s.runner.CancelDeleted(id)
	if err := s.st.DeleteFeed(ctx, id); err != nil {
		return err
	}
	s.log.Info("Deleted feed", "feed_id", id, "name", f.Name)
	s.record(ctx, audit.FeedDelete, f, nil)
	s.bus.Publish(events.Event{FeedID: id, Deleted: true})
	return nil
}

// SetEnabled turns a feed on or off. Disabling needs confirm: it stops
// ingestion and cancels a run in flight. Enabling runs the feed at once,
// fetching what was missed since it was disabled (bounded by its backfill
// days, for sources that select by date).
func (s *Service) SetEnabled(ctx context.Context, id int64, enabled, confirm bool) (*store.Feed, error) {
	if !enabled && !confirm {
		return nil, store.Invalid("confirm", "disabling a feed stops its ingestion: confirm with confirm: true")
	}
	before, err := s.st.Feed(ctx, id)
	if err != nil {
		return nil, err
	}
	if enabled && !before.Enabled && before.Type == store.FeedPremium {
		if err := s.checkEnablePremium(before); err != nil {
			return nil, err
		}
	}
	f, err := s.st.SetFeedEnabled(ctx, id, enabled)
	if err != nil {
		return nil, err
	}
	if before.Enabled == enabled {
		return f, nil
	}
	if enabled {
		s.log.Info("Enabled feed", "feed_id", id)
		s.record(ctx, audit.FeedEnable, f, nil)
		s.bus.PublishFeed(f)
		if err := s.runner.Schedule(f, true); err != nil {
			return nil, err
		}
		return f, nil
	}
	s.log.Info("Disabled feed", "feed_id", id)
	s.record(ctx, audit.FeedDisable, f, nil)
	s.runner.Unschedule(id)
	s.runner.CancelDisabled(id)
	if f, err = s.st.Feed(ctx, id); err != nil {
		return nil, err
	}
	s.bus.PublishFeed(f)
	return f, nil
}

// RunNow starts a run of an enabled feed at once and returns the feed as it
// is when the run has been queued. A feed with a run in flight, here or on
// another instance (its run is open in the store, or its lock is held), is
// not run twice: ErrAlreadyRunning; of instances asked at the same moment,
// one starts the run. A run whose end is committed no longer counts, even
// while the runner is letting go of the feed: the new run then starts as
// soon as it has.
func (s *Service) RunNow(ctx context.Context, id int64) (*store.Feed, error) {
	f, err := s.st.Feed(ctx, id)
	if err != nil {
		return nil, err
	}
	if !f.Enabled {
		return nil, store.Invalid("id", "the feed is disabled: enable it to run it")
	}
	last, err := s.st.LastRun(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if last != nil && last.EndedAt == nil {
		return nil, ErrAlreadyRunning
	}
	busy, err := s.runner.StartNow(ctx, id)
	if err != nil {
		return nil, err
	}
	if busy {
		return nil, ErrAlreadyRunning
	}
	s.record(ctx, audit.FeedRunNow, f, nil)
	return f, nil
}

// runAfterFix runs an enabled feed whose connection settings changed, so
// that corrected credentials show their effect at once rather than after a
// polling interval. A run in flight with the old settings finishes first.
func (s *Service) runAfterFix(f *store.Feed) {
	if f.Enabled {
		s.runner.RunAgain(f.ID)
	}
}

// ResetCursor forgets where the feed's source resumes from.
func (s *Service) ResetCursor(ctx context.Context, id int64) (*store.Feed, error) {
	f, err := s.st.ResetFeedCursor(ctx, id)
	if err != nil {
		return nil, err
	}
	s.record(ctx, audit.FeedReset, f, map[string]any{"cursor": ""})
	s.bus.PublishFeed(f)
	return f, nil
}
