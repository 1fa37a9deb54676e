package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/builtin/circl"
	"github.com/tifeeds/tifeeds/ingest/builtin/etopen"
	"github.com/tifeeds/tifeeds/ingest/builtin/etrep"
	"github.com/tifeeds/tifeeds/ingest/builtin/openphish"
	"github.com/tifeeds/tifeeds/ingest/builtin/otx"
	"github.com/tifeeds/tifeeds/ingest/builtin/phishtank"
	"github.com/tifeeds/tifeeds/ingest/builtin/threatfox"
	"github.com/tifeeds/tifeeds/ingest/builtin/urlhaus"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// BuiltinKeys are the key settings of the built-in feeds, in clear. They
// are handed to the sources only: never logged, stored or shown.
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

// BuiltinEnv is what a built-in source is built with.
type BuiltinEnv struct {
	// Client is the vendor client: the egress policy and the feed mirror.
	Client *http.Client
	// Key is the kind's key setting, "" when unset or when the kind has none.
	Key string
	Now func() time.Time
}

// BuiltinFetch is the Fetch method of a built-in source (see the contract
// of the packages under ingest/builtin).
type BuiltinFetch func(ctx context.Context, cursor string, since time.Time, sink ioc.Sink) (string, error)

// BuiltinOptions configure the built-in sources.
type BuiltinOptions struct {
	// Client is the vendor client (egress.NewVendorClient); nil: the
	// registry's client.
	Client *http.Client
	Keys   BuiltinKeys
	Now    func() time.Time // nil: time.Now
	// WriteRate is the constant rate, in indicators per hour, of the
	// premium kinds that declare one (RISK_LIST); 0: DefaultWriteRate.
	WriteRate float64
}

// builtinSources binds each built-in kind to its package's source: one
// line per kind.
var builtinSources = map[builtin.Kind]func(e BuiltinEnv) BuiltinFetch{
	builtin.OpenThreatExchange: func(e BuiltinEnv) BuiltinFetch {
		return (&otx.Source{Client: e.Client, Key: e.Key, Now: e.Now}).Fetch
	},
	builtin.Government: func(e BuiltinEnv) BuiltinFetch {
		return (&circl.Source{Client: e.Client, Now: e.Now}).Fetch
	},
	builtin.IPDomainReputation: func(e BuiltinEnv) BuiltinFetch {
		return (&etrep.Source{Client: e.Client, Key: e.Key, Now: e.Now}).Fetch
	},
	builtin.IDSRules: func(e BuiltinEnv) BuiltinFetch {
		return (&etopen.Source{Client: e.Client, Now: e.Now}).Fetch
	},
	builtin.PhishingURLDatabase: func(e BuiltinEnv) BuiltinFetch {
		return (&phishtank.Source{Client: e.Client, Key: e.Key, Now: e.Now}).Fetch
	},
	builtin.MalwareURLSSL: func(e BuiltinEnv) BuiltinFetch {
		return (&urlhaus.Source{Client: e.Client, Key: e.Key, Now: e.Now}).Fetch
	},
	builtin.PhishingURLFeed: func(e BuiltinEnv) BuiltinFetch {
		return (&openphish.Source{Client: e.Client, Now: e.Now}).Fetch
	},
	builtin.EmergingThreat: func(e BuiltinEnv) BuiltinFetch {
		return (&threatfox.Source{Client: e.Client, Key: e.Key, Now: e.Now}).Fetch
	},
}

// RegisterBuiltins adds every built-in kind this build has a source for,
// and remembers the key settings (the API says which are missing).
func (r *Registry) RegisterBuiltins(o BuiltinOptions) {
	for kind, newFetch := range builtinSources {
		r.RegisterBuiltin(kind, o, newFetch)
	}
	r.mu.Lock()
	r.builtinKeys = o.Keys
	r.mu.Unlock()
}

// RegisterBuiltin adds the built-in kind whose source newFetch builds, with
// the key of its kind from o.Keys.
func (r *Registry) RegisterBuiltin(kind builtin.Kind, o BuiltinOptions, newFetch func(e BuiltinEnv) BuiltinFetch) {
	spec, _ := builtin.Lookup(kind)
	client := o.Client
	if client == nil {
		client = r.client
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	env := BuiltinEnv{Client: client, Key: o.Keys.For(spec.Key), Now: now}
	r.Register(string(kind), Category{
		New: func(SourceConfig) (Source, error) {
			fetch := newFetch(env)
			return SourceFunc(func(ctx context.Context, req FetchRequest, sink ioc.Sink) (string, error) {
				return fetch(ctx, req.Cursor, req.Since, sink)
			}), nil
		},
	})
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
	if r.builtinKeys.For(spec.Key) != "" {
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
	return fmt.Errorf("ingest: no source for %q feeds in this build", SourceKey(f))
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
