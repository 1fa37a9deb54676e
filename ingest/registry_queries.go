package ingest

import "context"

// The registry's answers to the feed service (package feeds), which
// declares them in feeds.Sources.

// Has reports whether this build can fetch the feeds of key.
func (r *Registry) Has(key string) bool {
	_, ok := r.Lookup(key)
	return ok
}

// Validate checks a feed's connection settings with the validation of its
// category or kind; nil when it has none.
func (r *Registry) Validate(ctx context.Context, key, url, username, password string, backfillDays int) error {
	c, ok := r.Lookup(key)
	if !ok || c.Validate == nil {
		return nil
	}
	return c.Validate(ctx, SourceConfig{URL: url, Username: username, Password: password, BackfillDays: backfillDays})
}
