// Package ingest runs the feeds: it schedules one job per enabled feed,
// fetches each through its Source into batched writes, records every run,
// drives the status machine of the spec and publishes every change on a Bus.
package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// FetchRequest is what a run asks of a source.
type FetchRequest struct {
	// Cursor is where the previous run stopped; empty to start afresh.
	Cursor string
	// Since is the oldest data wanted (the backfill bound), for sources that
	// can select by date; zero for no bound.
	Since time.Time
	// Limit is the most indicators the run may hand over; 0 for no limit.
	// A source that honours it stops with ErrLimitReached and a cursor.
	Limit int64
	// Started is when the run started, on the runner's clock: a snapshot
	// source that reads one list over several runs keeps the first run's
	// in its cursor and names it to ioc.ListCompleteSince at the end.
	Started time.Time
}

// Source is one feed's way of fetching: it streams indicators into sink,
// checkpointing where a later run may resume, and returns the cursor the
// next run starts from. It never holds a whole file or collection in memory.
type Source interface {
	Fetch(ctx context.Context, req FetchRequest, sink ioc.Sink) (cursor string, err error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, req FetchRequest, sink ioc.Sink) (string, error)

// Fetch calls f.
func (f SourceFunc) Fetch(ctx context.Context, req FetchRequest, sink ioc.Sink) (string, error) {
	return f(ctx, req, sink)
}

// RunCapped is how a source says it stopped at a per-run bound of its own
// (pages, objects, time) before the end of its data. It is not a failure:
// the source checkpointed, the run ends as a success with Note, and the
// next run goes on from the cursor.
type RunCapped struct {
	Note string
	Err  error
}

func (e *RunCapped) Error() string { return e.Err.Error() }
func (e *RunCapped) Unwrap() error { return e.Err }

// SourceConfig is a feed's connection settings, with its secret in clear.
type SourceConfig struct {
	URL          string
	Username     string
	Password     string
	BackfillDays int
}

// Category is how the feeds of one category (custom) or kind (built-in,
// premium) are fetched and checked.
type Category struct {
	// New builds the source of a feed.
	New func(cfg SourceConfig) (Source, error)
	// Validate checks a collection URL when a feed is created or its URL
	// changes; it returns a message for the user. Nil accepts every URL.
	Validate func(ctx context.Context, cfg SourceConfig) error
	// DailyLimit is the most indicators a feed of this category may bring in
	// per UTC day; 0 for no limit.
	DailyLimit int64
	// RunLimit is the most indicators one run (poll) may bring in; 0 for no
	// limit.
	RunLimit int64
	// Rate, when positive, makes the kind's writes constant-rate: each
	// poll stores at most Rate indicators per hour of the feed's polling
	// interval, and the source goes on from its cursor at the next poll
	// (see constantRate in runner.go). The source honours ioc.ErrPaceReached
	// and reports its progress with ioc.Backlog.
	Rate float64
}

// Registry maps a feed's category (custom feeds) or kind (built-in and
// premium feeds) to how it is fetched.
type Registry struct {
	mu          sync.RWMutex
	m           map[string]Category
	client      *http.Client
	builtinKeys BuiltinKeys
}

// NewRegistry returns an empty registry whose sources fetch under the
// egress policy's defaults: private and loopback destinations refused.
func NewRegistry() *Registry { return NewRegistryWithClient(nil) }

// NewRegistryWithClient returns an empty registry whose sources fetch
// through client, which must be an egress client (egress.NewClient): the
// one client every feed fetch goes through, so that one policy holds for
// all. Nil means egress.NewClient(egress.Options{}).
func NewRegistryWithClient(client *http.Client) *Registry {
	if client == nil {
		client = egress.NewClient(egress.Options{})
	}
	return &Registry{m: map[string]Category{}, client: client}
}

// Client is the HTTP client the registry's sources fetch through.
func (r *Registry) Client() *http.Client { return r.client }

// Register adds or replaces the category named key.
func (r *Registry) Register(key string, c Category) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[key] = c
}

// Lookup returns the category named key.
func (r *Registry) Lookup(key string) (Category, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.m[key]
	return c, ok
}

// SourceKey is the registry key of a feed: the category of a custom feed,
// the kind of the others.
func SourceKey(f *store.Feed) string {
	if f.Type == store.FeedCustom {
		return f.Category
	}
	return f.Kind
}

// TSVDailyLimit is the spec's bound on what a TSV feed ingests per day.
const TSVDailyLimit = 25000

// TSVOptions tunes the TSV sources; zero values take the spec's limits.
type TSVOptions struct {
	Client     *http.Client // nil: the registry's
	TempDir    string
	MaxBytes   int64
	Timeout    time.Duration
	ChunkLines int64
	DailyLimit int64
}

// RegisterTSV adds the custom TSV category.
func (r *Registry) RegisterTSV(o TSVOptions) {
	limit := o.DailyLimit
	if limit == 0 {
		limit = TSVDailyLimit
	}
	r.Register(store.CategoryTSV, Category{
		New: func(cfg SourceConfig) (Source, error) {
			s := &tsv.Source{URL: cfg.URL, Username: cfg.Username, Password: cfg.Password, Client: cmp.Or(o.Client, r.client),
				TempDir: o.TempDir, MaxBytes: o.MaxBytes, Timeout: o.Timeout, ChunkLines: o.ChunkLines}
			return SourceFunc(func(ctx context.Context, req FetchRequest, sink ioc.Sink) (string, error) {
				cursor, err := s.Fetch(ctx, req.Cursor, req.Limit, &limitSink{Sink: sink})
				if errors.Is(err, tsv.ErrLimitReached) {
					err = fmt.Errorf("%w: %w", ErrLimitReached, err)
				}
				return cursor, err
			}), nil
		},
		Validate: func(_ context.Context, cfg SourceConfig) error {
			if err := tsv.ValidateURL(cfg.URL); err != nil {
				return store.Invalid("collectionUrl", "%v", err)
			}
			return nil
		},
		DailyLimit: limit,
	})
}

// limitSink lets the source read on to the end of its chunk when the batch
// sink reports the limit on the indicator that used it up: that indicator
// was stored, and the source, which sizes its chunks by the limit, stops at
// the next checkpoint with an exact cursor. Indicators after it are refused.
type limitSink struct {
	ioc.Sink
	reached bool
}

func (s *limitSink) Indicator(ctx context.Context, ind ioc.Indicator) error {
	err := s.Sink.Indicator(ctx, ind)
	if errors.Is(err, ErrLimitReached) && !s.reached {
		s.reached = true
		return nil
	}
	return err
}

// Downloaded passes a download's progress on to the sink it wraps.
func (s *limitSink) Downloaded(read, total int64) {
	if ps, ok := s.Sink.(ioc.ProgressSink); ok {
		ps.Downloaded(read, total)
	}
}

// ListComplete passes on that a snapshot list was read whole, unless the
// limit cut the run short: a list read in part must expire nothing.
func (s *limitSink) ListComplete(source string) {
	if !s.reached {
		ioc.ListComplete(s.Sink, source)
	}
}

// ListCompleteSince passes on that a list read over several runs was read
// to its end, unless the limit cut this run short.
func (s *limitSink) ListCompleteSince(source string, since time.Time) {
	if !s.reached {
		ioc.ListCompleteSince(s.Sink, source, since)
	}
}
