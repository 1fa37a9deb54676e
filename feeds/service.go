// Package feeds is the feed service: the changes the APIs make to feeds
// (create, update, enable, delete, reset, run now) and to the allowlist.
// It stores them, announces them on the bus and tells the runner what they
// mean for ingestion, through the small interfaces declared here.
package feeds

import (
	"context"
	"errors"
	"log/slog"
	"strconv"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/store"
)

// Store is what the service needs of the store.
type Store interface {
	Feed(ctx context.Context, id int64) (*store.Feed, error)
	CreateCustomFeed(ctx context.Context, in store.NewCustomFeed) (*store.Feed, error)
	CreatePremiumFeed(ctx context.Context, f *store.Feed, maxOfKind int) error
	EnsureFeed(ctx context.Context, f *store.Feed) (created bool, err error)
	UpdateFeed(ctx context.Context, id int64, p store.FeedPatch) (before, after *store.Feed, err error)
	SetFeedEnabled(ctx context.Context, id int64, enabled bool) (*store.Feed, error)
	ResetFeedCursor(ctx context.Context, id int64) (*store.Feed, error)
	ResetPremiumFeed(ctx context.Context, id int64, to store.FeedReset) (*store.Feed, error)
	DeleteFeed(ctx context.Context, id int64) error
	LastRun(ctx context.Context, feedID int64) (*store.FeedRun, error)
	AllowlistStore
}

// Secrets seals the credentials the service stores and opens them again
// to validate a changed connection.
type Secrets interface {
	Seal(plain string) ([]byte, error)
	Open(sealed []byte) (string, error)
}

// Sources answers for the registry of feed kinds and categories.
type Sources interface {
	// Has reports whether this build can fetch the feeds of key (a custom
	// feed's category, another feed's kind).
	Has(key string) bool
	// Validate checks a feed's connection settings with its source (a
	// TAXII collection URL against its server); nil when key has no check.
	Validate(ctx context.Context, key string, feed source.Feed) error
}

// Runner is what the service asks of the runner when a change affects
// ingestion.
type Runner interface {
	// Schedule (re)schedules an enabled feed from its last run, running it
	// at once when it is due or runNow is set.
	Schedule(f *store.Feed, runNow bool) error
	// Unschedule removes the feed's job.
	Unschedule(feedID int64)
	// CancelDisabled, CancelDeleted and CancelReset cancel the feed's run
	// here, its end recorded for that reason, and wait for it to end.
	CancelDisabled(feedID int64)
	CancelDeleted(feedID int64)
	CancelReset(feedID int64)
	// StartNow starts a run of the feed at once; busy says a run of it
	// goes on (here, or on another instance holding its lock).
	StartNow(ctx context.Context, feedID int64) (busy bool, err error)
	// RunAgain runs the feed once more, after the run in flight if any.
	RunAgain(feedID int64)
}

// ErrAlreadyRunning is RunNow's answer for a feed with a run in flight.
var ErrAlreadyRunning = errors.New("the feed is already running; its run goes on")

// Options configure a Service.
type Options struct {
	Store   Store
	Secrets Secrets
	Bus     *events.Bus
	Sources Sources
	Runner  Runner
	// Allowlist is the allowlist in force that the allowlist changes
	// reload and remove with; without it Allowlist returns nil.
	Allowlist AllowlistInForce
	Log       *slog.Logger
	// PremiumEndpointBase, when set, is where every feed-list platform
	// endpoint must point ({premium_endpoint_base} of the spec).
	PremiumEndpointBase string
	// Audit records every change; nil records none.
	Audit *audit.Log
}

// Service carries out the feed changes of the APIs.
type Service struct {
	st                  Store
	secrets             Secrets
	bus                 *events.Bus
	sources             Sources
	runner              Runner
	log                 *slog.Logger
	premiumEndpointBase string
	allowlist           *Allowlist
	audit               *audit.Log
}

// New returns the service; every option but Log and PremiumEndpointBase is
// needed.
func New(o Options) (*Service, error) {
	if o.Store == nil || o.Secrets == nil || o.Bus == nil || o.Sources == nil || o.Runner == nil {
		return nil, errors.New("feeds: the service needs a store, secrets, a bus, sources and a runner")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	s := &Service{st: o.Store, secrets: o.Secrets, bus: o.Bus, sources: o.Sources, runner: o.Runner,
		log: o.Log, premiumEndpointBase: o.PremiumEndpointBase, audit: o.Audit}
	if o.Allowlist != nil {
		s.allowlist = NewAllowlist(o.Store, o.Allowlist, o.Bus, o.Log)
		s.allowlist.audit = o.Audit
	}
	return s, nil
}

// Allowlist returns the changes of the user allowlist; nil when the
// service was built without the allowlist in force.
func (s *Service) Allowlist() *Allowlist { return s.allowlist }

// record adds a change of feed f to the audit log.
func (s *Service) record(ctx context.Context, action string, f *store.Feed, fields map[string]any) {
	s.audit.Record(ctx, action, audit.Target{Type: audit.TargetFeed, ID: strconv.FormatInt(f.ID, 10), Name: f.Name}, fields)
}
