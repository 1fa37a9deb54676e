package ingest

import (
	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ioc"
)

// What the API reads of the runner (graph.Ingestion), besides NextRun and
// Running.

// MissingKey names the key setting a built-in kind needs and this server
// lacks, or "".
func (r *Runner) MissingKey(k builtin.Kind) string { return r.sources.MissingKey(k) }

// Match reports the entry of the allowlist in force covering a normalised
// indicator value: the runner is the allowlist.Matcher of lookups.
func (r *Runner) Match(kind ioc.Kind, value string) (allowlist.Match, bool) {
	return r.opts.Allowlist.Match(kind, value)
}
