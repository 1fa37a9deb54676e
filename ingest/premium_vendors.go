package ingest

import (
	"context"
	"net/http"
	"time"

	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/premium/falcon"
	"github.com/tifeeds/tifeeds/ingest/premium/gti"
	"github.com/tifeeds/tifeeds/ingest/premium/risklist"
	"github.com/tifeeds/tifeeds/ingest/premium/threatstream"
	"github.com/tifeeds/tifeeds/ioc"
)

// PremiumEnv is what the source of a premium vendor kind is built from:
// the vendor client (egress policy and feed mirror) and the feed's own
// settings, its credentials in clear (Username holds a username or client
// ID, Password a password, API key or client secret).
type PremiumEnv struct {
	Client *http.Client
	Config SourceConfig
	Now    func() time.Time
}

// PremiumFetch is the Fetch method of a premium vendor source: the same
// shape as a built-in source's (see FEEDS contract in ingest/builtin).
type PremiumFetch func(ctx context.Context, cursor string, since time.Time, sink ioc.Sink) (string, error)

// premiumVendorSources binds each premium kind read from a fixed vendor
// API to its package's source: one line per kind. (The dark-web TAXII
// and feed-list kinds read URLs the user types and register themselves.)
var premiumVendorSources = map[premium.Kind]func(e PremiumEnv) PremiumFetch{
	premium.ThreatIntelAPI: func(e PremiumEnv) PremiumFetch {
		return (&gti.Source{Client: e.Client, Secret: e.Config.Password, Now: e.Now}).Fetch
	},
	premium.RiskList: func(e PremiumEnv) PremiumFetch {
		return (&risklist.Source{Client: e.Client, Secret: e.Config.Password, Now: e.Now}).Fetch
	},
	premium.ThreatPlatform: func(e PremiumEnv) PremiumFetch {
		return (&threatstream.Source{Client: e.Client, Username: e.Config.Username, Secret: e.Config.Password, Now: e.Now}).Fetch
	},
	premium.EndpointProtection: func(e PremiumEnv) PremiumFetch {
		return (&falcon.Source{Client: e.Client, Username: e.Config.Username, Secret: e.Config.Password, Now: e.Now}).Fetch
	},
}

// RegisterPremiumVendors adds every premium vendor kind this build has a
// source for. o.Client is the vendor client; nil: the registry's client.
func (r *Registry) RegisterPremiumVendors(o BuiltinOptions) {
	for kind, newFetch := range premiumVendorSources {
		r.RegisterPremiumVendor(kind, o, newFetch)
	}
}

// RegisterPremiumVendor adds the premium kind whose source newFetch builds
// from each feed's settings.
func (r *Registry) RegisterPremiumVendor(kind premium.Kind, o BuiltinOptions, newFetch func(e PremiumEnv) PremiumFetch) {
	client := o.Client
	if client == nil {
		client = r.client
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	// The kind's per-poll bound (50,000 for the endpoint-protection kind)
	// is the runner's limit: the sink refuses what is over it, and the
	// source, checkpointed, goes on from there at the next poll.
	spec, _ := premium.Lookup(kind)
	var rate float64
	if spec.ConstantRate {
		rate = o.WriteRate
		if rate <= 0 {
			rate = DefaultWriteRate
		}
	}
	r.Register(string(kind), Category{
		Rate: rate,
		New: func(cfg SourceConfig) (Source, error) {
			fetch := newFetch(PremiumEnv{Client: client, Config: cfg, Now: now})
			return SourceFunc(func(ctx context.Context, req FetchRequest, sink ioc.Sink) (string, error) {
				return fetch(ctx, req.Cursor, req.Since, sink)
			}), nil
		},
		RunLimit: spec.PerPoll,
	})
}
