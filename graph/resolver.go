// Package graph is the GraphQL API: gqlgen's generated code and thin
// resolvers that call the domain packages.
package graph

import (
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/store"
)

// Resolver is the root of the resolvers; everything they need is a field.
type Resolver struct {
	Store *store.Store
	// Events carries feed changes and run progress to subscriptions.
	Events *events.Bus
	// Ingest runs the feeds: their next runs, the runs going on, the
	// allowlist in force.
	Ingest *ingest.Runner
	// Feeds carries out the feed mutations.
	Feeds *feeds.Service
	// SaaS is the managed edition, where tenants may not use retention groups.
	SaaS bool
}
