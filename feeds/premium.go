package feeds

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/store"
)

// PremiumFeedInput is a new feed of a premium kind that allows several, its
// endpoint (with the key) in clear.
type PremiumFeedInput struct {
	Kind             premium.Kind
	Name             string
	Category         string // the kind's first category when empty
	APIEndpoint      string
	PollingFrequency *int // the kind's default when nil
	RetentionPeriod  *int // the kind's default when nil
}

// inputNames are the API's names of the premium settings, which the
// validation errors carry so that a form can show them beside their input.
var inputNames = map[premium.Field]string{
	premium.Name: "name", premium.Category: "category", premium.CollectionURL: "collectionUrl",
	premium.Username: "username", premium.Password: "password", premium.APIKey: "apiKey",
	premium.ClientID: "clientId", premium.ClientSecret: "clientSecret", premium.APIEndpoint: "apiEndpoint",
	premium.PollingFrequency: "pollingFrequency", premium.BackfillDays: "backfillDays",
	premium.RetentionPeriod: "retentionPeriod",
}

// PremiumKindAvailable reports whether this build can fetch feeds of kind k.
func (s *Service) PremiumKindAvailable(k premium.Kind) bool {
	return s.sources.Has(string(k))
}

// EnsurePremiumFeeds creates, disabled, the premium feed of every kind that
// has exactly one and does not have it yet.
func (s *Service) EnsurePremiumFeeds(ctx context.Context) error {
	for _, spec := range premium.Specs() {
		if spec.Creatable {
			continue
		}
		f := &store.Feed{Type: store.FeedPremium, Kind: string(spec.Kind)}
		applyDelivered(f, spec)
		created, err := s.st.EnsureFeed(ctx, f)
		if err != nil {
			return fmt.Errorf("feeds: unable to deliver the %s premium feed: %w", spec.Kind, err)
		}
		if created {
			s.log.Info("Delivered premium feed", "feed_id", f.ID, "name", f.Name)
		}
	}
	return nil
}

// applyDelivered gives f the settings its kind is delivered (and reset) with.
func applyDelivered(f *store.Feed, spec premium.Spec) {
	if !spec.Creatable {
		f.Name, f.Category = spec.Title, spec.Category
	}
	f.Description = spec.Description
	f.Enabled, f.StatusMessage = false, store.MessageDisabled
	f.PollingFrequency = spec.DefaultPolling
	f.RetentionPeriod = spec.InitialRetention()
	f.BackfillDays = spec.DefaultBackfill
}

// CreatePremiumFeed creates a feed of a kind that allows several (the
// feed-list platform), disabled: the user enables it when ready.
func (s *Service) CreatePremiumFeed(ctx context.Context, in PremiumFeedInput) (*store.Feed, error) {
	spec, ok := premium.Lookup(in.Kind)
	if !ok {
		return nil, store.Invalid("kind", "unknown premium kind %q", in.Kind)
	}
	if !spec.Creatable {
		return nil, store.Invalid("kind", "%s has one feed, delivered with the service: edit that feed", spec.Title)
	}
	f := &store.Feed{Type: store.FeedPremium, Kind: string(spec.Kind)}
	applyDelivered(f, spec)
	// Every invalid field is reported at once, so the form shows them all.
	var errs []error
	name, err := feedName(spec, in.Name)
	errs = append(errs, err)
	f.Name = name
	f.Category = in.Category
	if f.Category == "" && len(spec.Categories) > 0 {
		f.Category = spec.Categories[0]
	}
	errs = append(errs, checkCategory(spec, f.Category))
	if in.PollingFrequency != nil {
		f.PollingFrequency = *in.PollingFrequency
	}
	if in.RetentionPeriod != nil {
		f.RetentionPeriod = *in.RetentionPeriod
	}
	errs = append(errs, checkRanges(spec, f))
	ep, err := premium.ParseEndpoint(in.APIEndpoint, s.premiumEndpointBase)
	if err != nil {
		errs = append(errs, store.Invalid("apiEndpoint", "%v", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if f.Secret, err = s.secrets.Seal(ep.Key); err != nil {
		return nil, err
	}
	f.CollectionURL = ep.URL
	if err := s.st.CreatePremiumFeed(ctx, f, spec.MaxFeeds); err != nil {
		return nil, err
	}
	s.log.Info("Created premium feed", "feed_id", f.ID, "name", f.Name)
	s.record(ctx, audit.FeedCreate, f, audit.Fields(in))
	s.bus.PublishFeed(f)
	return f, nil
}

// ResetPremiumFeed returns a premium feed to the state it was delivered
// (or created) in: it cancels its run, disables it, clears its credentials
// and cursor, restores its kind's settings and deletes its sightings. A
// feed-list feed keeps its name and category; it needs a new endpoint.
func (s *Service) ResetPremiumFeed(ctx context.Context, id int64) (*store.Feed, error) {
	cur, err := s.st.Feed(ctx, id)
	if err != nil {
		return nil, err
	}
	if !cur.Resettable() {
		return nil, store.Invalid("id", "only premium feeds can be reset")
	}
	spec, ok := premium.Lookup(premium.Kind(cur.Kind))
	if !ok {
		return nil, fmt.Errorf("feeds: feed %d has an unknown premium kind %q", id, cur.Kind)
	}
	// Disabled first, in the store: from then on no batch of a run of the
	// feed commits, here or on another instance (each checks that its feed
	// is enabled). Then the run here ends, and the feed is reset.
	if cur.Enabled {
		off, err := s.st.SetFeedEnabled(ctx, id, false)
		if err != nil {
			return nil, err
		}
		s.bus.PublishFeed(off) // a run of it on another instance stops at once
	}
	s.runner.Unschedule(id)
	s.runner.CancelReset(id)
	to := *cur
	applyDelivered(&to, spec)
	f, err := s.st.ResetPremiumFeed(ctx, id, store.FeedReset{Name: to.Name, Category: to.Category,
		Description: to.Description, PollingFrequency: to.PollingFrequency,
		RetentionPeriod: to.RetentionPeriod, BackfillDays: to.BackfillDays})
	if err != nil {
		return nil, err
	}
	s.log.Info("Reset premium feed", "feed_id", id, "name", f.Name)
	s.record(ctx, audit.FeedReset, f, nil)
	s.bus.PublishFeed(f)
	return f, nil
}

// updatePremium applies an update to a premium feed: only the settings its
// kind lists may change, within the kind's ranges.
func (s *Service) updatePremium(ctx context.Context, cur *store.Feed, in FeedUpdate) (*store.Feed, error) {
	spec, ok := premium.Lookup(premium.Kind(cur.Kind))
	if !ok {
		return nil, fmt.Errorf("feeds: feed %d has an unknown premium kind %q", cur.ID, cur.Kind)
	}
	if in.Description != nil {
		return nil, store.Invalid("description", "is read-only for premium feeds")
	}
	given := map[premium.Field]bool{
		premium.Name: in.Name != nil, premium.Category: in.Category != nil,
		premium.CollectionURL: in.CollectionURL != nil, premium.Username: in.Username != nil,
		premium.Password: in.Password != nil, premium.APIKey: in.APIKey != nil,
		premium.ClientID: in.ClientID != nil, premium.ClientSecret: in.ClientSecret != nil,
		premium.APIEndpoint: in.APIEndpoint != nil, premium.PollingFrequency: in.PollingFrequency != nil,
		premium.BackfillDays: in.BackfillDays != nil, premium.RetentionPeriod: in.RetentionPeriod != nil,
	}
	for _, field := range slices.Sorted(maps.Keys(given)) {
		if given[field] && !spec.Edits(field) {
			return nil, store.Invalid(inputNames[field], "is not a setting of %s feeds", spec.Title)
		}
	}
	if in.Category != nil {
		if err := checkCategory(spec, *in.Category); err != nil {
			return nil, err
		}
	}
	patch := store.FeedPatch{PollingFrequency: in.PollingFrequency, RetentionPeriod: in.RetentionPeriod,
		BackfillDays: in.BackfillDays, Category: in.Category, CollectionURL: in.CollectionURL,
		AllowRuleActions: in.AllowRuleActions}
	if in.Name != nil {
		name, err := feedName(spec, *in.Name)
		if err != nil {
			return nil, err
		}
		patch.StoredName = &name
	}
	// Username and client ID share the username; the kind's one secret is
	// sealed.
	if in.Username != nil {
		patch.Username = in.Username
	} else if in.ClientID != nil {
		patch.Username = in.ClientID
	}
	var secret *string
	for _, s := range []*string{in.Password, in.APIKey, in.ClientSecret} {
		if s != nil {
			secret = s
		}
	}
	if in.APIEndpoint != nil {
		url, key := "", ""
		if *in.APIEndpoint != "" {
			ep, err := premium.ParseEndpoint(*in.APIEndpoint, s.premiumEndpointBase)
			if err != nil {
				return nil, store.Invalid("apiEndpoint", "%v", err)
			}
			url, key = ep.URL, ep.Key
		}
		patch.CollectionURL, secret = &url, &key
	}
	// The feed as the update leaves it, for the checks that need it whole.
	next := *cur
	setIf(&next.PollingFrequency, patch.PollingFrequency)
	setIf(&next.RetentionPeriod, patch.RetentionPeriod)
	setIf(&next.BackfillDays, patch.BackfillDays)
	setIf(&next.Username, patch.Username)
	setIf(&next.CollectionURL, patch.CollectionURL)
	if secret != nil && *secret == "" {
		next.Secret = nil
	}
	if err := checkRanges(spec, &next); err != nil {
		return nil, err
	}
	if cur.Enabled {
		// The settings a feed needs to be enabled stay while it is.
		if field := missingToEnable(&next, spec); field != "" {
			return nil, store.Invalid(inputNames[field], "is needed while the feed is enabled: disable the feed first")
		}
	}
	if secret != nil {
		sealed, err := s.secrets.Seal(*secret)
		if err != nil {
			return nil, err
		}
		patch.Secret = &sealed
	}
	if in.CollectionURL != nil || in.Username != nil || in.Password != nil {
		if err := s.validateSource(ctx, cur, in); err != nil {
			return nil, err
		}
	}
	return s.applyUpdate(ctx, cur.ID, patch)
}

// missingToEnable names the first setting f needs before it can be enabled,
// or "" when it has them all.
func missingToEnable(f *store.Feed, spec premium.Spec) premium.Field {
	for _, field := range spec.RequiredToEnable {
		var set bool
		switch field {
		case premium.CollectionURL:
			set = f.CollectionURL != ""
		case premium.Username, premium.ClientID:
			set = f.Username != ""
		case premium.Password, premium.APIKey, premium.ClientSecret:
			set = f.HasSecret()
		case premium.APIEndpoint:
			set = f.CollectionURL != "" && f.HasSecret()
		default:
			set = true
		}
		if !set {
			return field
		}
	}
	return ""
}

// checkEnablePremium refuses to enable a premium feed that lacks a setting
// its kind needs, or whose kind this build cannot fetch.
func (s *Service) checkEnablePremium(f *store.Feed) error {
	spec, ok := premium.Lookup(premium.Kind(f.Kind))
	if !ok {
		return fmt.Errorf("feeds: feed %d has an unknown premium kind %q", f.ID, f.Kind)
	}
	if field := missingToEnable(f, spec); field != "" {
		return store.Invalid(inputNames[field], "must be set before the feed can be enabled: edit the feed first")
	}
	if !s.PremiumKindAvailable(spec.Kind) {
		return store.Invalid("enabled", "%s feeds cannot be fetched by this version of tifeeds yet; the feed keeps its settings", spec.Title)
	}
	return nil
}

// feedName is the stored name of a feed of a creatable kind.
func feedName(spec premium.Spec, raw string) (string, error) {
	name := spec.FeedName(raw)
	if name == spec.NamePrefix {
		return "", store.Invalid("name", "must not be empty")
	}
	return name, nil
}

// setIf sets *dst to *v when v is given.
func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func checkRanges(spec premium.Spec, f *store.Feed) error {
	var errs []error
	if !spec.Polling.Contains(f.PollingFrequency) {
		errs = append(errs, store.Invalid("pollingFrequency", "must be between %d and %d hours", spec.Polling.Min, spec.Polling.Max))
	}
	if spec.Backfill != nil && !spec.Backfill.Contains(f.BackfillDays) {
		errs = append(errs, store.Invalid("backfillDays", "must be between %d and %d days", spec.Backfill.Min, spec.Backfill.Max))
	}
	if spec.Retention != nil && !spec.Retention.Contains(f.RetentionPeriod) {
		errs = append(errs, store.Invalid("retentionPeriod", "must be between %d and %d days", spec.Retention.Min, spec.Retention.Max))
	}
	return errors.Join(errs...)
}

func checkCategory(spec premium.Spec, category string) error {
	if !slices.Contains(spec.Categories, category) {
		return store.Invalid("category", "must be one of: %s", strings.Join(spec.Categories, ", "))
	}
	return nil
}
