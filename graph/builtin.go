package graph

import (
	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/store"
)

// builtinSpec is the catalogue entry of a built-in feed.
func builtinSpec(f *store.Feed) (builtin.Spec, bool) {
	if f.Type != store.FeedBuiltin {
		return builtin.Spec{}, false
	}
	return builtin.Lookup(builtin.Kind(f.Kind))
}
