package ingest

import (
	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ioc"
)

// What the API (graph.Ingestion, besides NextRun and Running) and the
// wiring read of the runner.

// MissingKey names the key setting a built-in kind needs and this server
// lacks, or "".
func (r *Runner) MissingKey(k builtin.Kind) string { return r.sources.MissingKey(k) }

// Match reports the entry of the allowlist in force covering a normalised
// indicator value: the runner is the allowlist.Matcher of lookups.
func (r *Runner) Match(kind ioc.Kind, value string) (allowlist.Match, bool) {
	return r.opts.Allowlist.Match(kind, value)
}

// Warninglists returns the allowlist and warninglists in force.
func (r *Runner) Warninglists() *allowlist.Set { return r.opts.Allowlist.Set() }

// Bus returns the bus the runner publishes on.
func (r *Runner) Bus() *events.Bus { return r.bus }

// Allowlist returns the allowlist ingestion applies.
func (r *Runner) Allowlist() *Allowlist { return r.opts.Allowlist }

// Sources returns the registry of sources.
func (r *Runner) Sources() *Registry { return r.sources }
