package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// BuiltinKeys are the key settings of the built-in feeds, in clear. They
// are handed to the sources only (source.Feed.Key): never logged, stored or shown.
type BuiltinKeys struct {
	OTX          string // --otx-api-key
	AbuseCH      string // --abusech-auth-key
	PhishTank    string // --phishtank-app-key
	ETReputation string // --et-reputation-code
}

// For returns the value of the key setting k.
func (k BuiltinKeys) For(key builtin.Key) string {
	switch key {
	case builtin.OTXKey:
		return k.OTX
	case builtin.AbuseCHKey:
		return k.AbuseCH
	case builtin.PhishTankKey:
		return k.PhishTank
	case builtin.ETReputationKey:
		return k.ETReputation
	}
	return ""
}

// keyOf returns the key setting of the kind named key, "" for a kind that
// has none.
func (r *Registry) keyOf(key string) string {
	spec, ok := builtin.Lookup(builtin.Kind(key))
	if !ok {
		return ""
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.keys.For(spec.Key)
}

// MissingKey returns the setting a built-in feed of kind k needs and lacks
// ("--otx-api-key (TIFEEDS_OTX_API_KEY)"), or "" when it lacks nothing.
func (r *Registry) MissingKey(k builtin.Kind) string {
	spec, ok := builtin.Lookup(k)
	if !ok || !spec.KeyRequired {
		return ""
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.keys.For(spec.Key) != "" {
		return ""
	}
	return spec.Key.Setting()
}

// errNoBuiltinSource is the failure of a run of a built-in kind this build
// has no source for.
var errNoBuiltinSource = errors.New("this version of tifeeds cannot fetch this built-in feed yet")

// noSourceError says that f's kind has no source here, as a Fetching Data
// Error that names the feed.
func noSourceError(f *store.Feed) error {
	if spec, ok := builtin.Lookup(builtin.Kind(f.Kind)); ok && f.Type == store.FeedBuiltin {
		return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("ingest: %s (%s): %w", f.Name, spec.Service, errNoBuiltinSource))
	}
	return fmt.Errorf("ingest: no source for %q feeds in this build", f.SourceKey())
}

// EnsureBuiltinFeeds delivers, enabled, the built-in feed of every kind
// that does not have it yet: on first start, and on an upgrade that brings
// new kinds. Any instance may do it; the store creates each feed once.
func (r *Runner) EnsureBuiltinFeeds(ctx context.Context) error {
	for _, spec := range builtin.Specs() {
		f := &store.Feed{Type: store.FeedBuiltin, Kind: string(spec.Kind), Name: spec.Name,
			Category: "Built-in", Description: spec.Description, Enabled: true,
			StatusMessage: store.MessageInitializing, PollingFrequency: store.BuiltinPollingHours,
			RetentionPeriod: builtin.DefaultRetention, BackfillDays: builtin.DefaultBackfill}
		created, err := r.st.EnsureFeed(ctx, f)
		if err != nil {
			return fmt.Errorf("ingest: unable to deliver the %s built-in feed: %w", spec.Kind, err)
		}
		if created {
			r.log.Info("Delivered built-in feed", "feed_id", f.ID, "name", f.Name)
		}
	}
	return nil
}
