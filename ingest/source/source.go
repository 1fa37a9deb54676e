// Package source is the contract between the runner and every feed kind:
// built-in, premium and custom alike. A kind declares itself with a Kind;
// its Source streams what it reads into a Sink, checkpointing where a later
// run may resume. It imports nothing of tifeeds but ioc, so that a kind's
// package depends on the contract and never on the runner.
package source

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Request is what a run asks of a source.
type Request struct {
	// Cursor is where the previous run stopped; empty to start afresh.
	Cursor string
	// Since is the oldest data wanted (the backfill bound), for sources that
	// can select by date; zero for no bound.
	Since time.Time
	// Limit is the most indicators the run may hand over; 0 for no limit.
	// A source that honours it checkpoints and stops with ErrLimitReached.
	Limit int64
	// Started is when the run started, on the runner's clock: a snapshot
	// source that reads one list over several runs keeps the first run's in
	// its cursor and names it to Sink.ListComplete at the end.
	Started time.Time
	// Feed is the feed's settings, its credentials in clear.
	Feed Feed
}

// Feed is a feed's connection settings, its secrets in clear. They are
// handed to the source only: never logged, stored or shown.
type Feed struct {
	URL string
	// Username is a username or a client ID.
	Username string
	// Password is a password, an API key or a client secret.
	Password string
	// Key is the built-in kind's key setting (--otx-api-key, …); "" when it
	// is unset or the kind has none.
	Key string
}

// Source is one kind's way of fetching. Fetch streams indicators into sink
// and checkpoints, before it returns, the cursor the next run starts from:
// the runner keeps the last cursor checkpointed, so nothing is returned
// beside the error. A source never holds a whole file or collection in
// memory.
type Source interface {
	Fetch(ctx context.Context, req Request, sink Sink) error
}

// Func adapts a function to Source.
type Func func(ctx context.Context, req Request, sink Sink) error

// Fetch calls f.
func (f Func) Fetch(ctx context.Context, req Request, sink Sink) error { return f(ctx, req, sink) }

// Env is what the runner offers every kind to build its source with.
type Env struct {
	// Client is the egress client: the one policy every feed fetch obeys.
	// Kinds that read URLs the user types fetch through it.
	Client *http.Client
	// VendorClient is the client of the fixed vendor APIs: the egress
	// policy and, in tests and benchmarks, the feed mirror.
	VendorClient *http.Client
	// Now is the runner's clock.
	Now func() time.Time
}

// Kind declares one feed kind (built-in or premium) or custom category.
type Kind struct {
	// Key is the registry key: the built-in or premium kind, or the custom
	// category.
	Key string
	// New builds the kind's source. It is called once per run.
	New func(env Env) Source
	// Validate checks a feed's settings when it is created or its URL
	// changes; the error is a message for the user. Nil accepts every URL.
	Validate func(ctx context.Context, env Env, feed Feed) error
	// DailyLimit is the most indicators a feed of the kind may bring in per
	// UTC day; 0 for no limit.
	DailyLimit int64
	// RunLimit is the most indicators one run (poll) may bring in; 0 for no
	// limit. The source is told it in Request.Limit.
	RunLimit int64
	// Rate, when positive, makes the kind's writes constant-rate: each poll
	// stores at most Rate indicators per hour of the feed's polling
	// interval, and the source goes on from its cursor at the next poll. The
	// source honours ErrPaceReached and reports its progress with
	// Sink.Backlog.
	Rate float64
}

// ErrLimitReached is what the sink's Indicator returns, wrapped or not, once
// the run's limit of indicators is used up, and what a source that honours
// Request.Limit returns when it stopped there.
var ErrLimitReached = errors.New("ingestion limit reached")

// ErrPaceReached is what the sink of a source written at a constant rate
// returns, wrapped, once the share of the current poll is used up. The
// indicator that got it WAS stored: the source checkpoints a cursor just
// after it, stops handing over and returns the error; the next poll goes on
// from that cursor.
var ErrPaceReached = errors.New("the share of this poll is written; the rest comes with the next polls")

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

// Invalid is what Kind.Validate returns for a setting the user must change.
// Field names the setting as the API does ("collectionUrl", "password").
type Invalid struct {
	Field string
	Err   error
}

func (e *Invalid) Error() string { return e.Err.Error() }
func (e *Invalid) Unwrap() error { return e.Err }
