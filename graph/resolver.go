// Package graph is the GraphQL API: gqlgen's generated code and thin
// resolvers that call the domain packages.
package graph

import (
	"context"
	"time"

	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/store"
)

// Resolver is the root of the resolvers; everything they need is a field.
type Resolver struct {
	// Store is what the resolvers read and write of the store, through the
	// small interfaces graph declares per noun.
	Store Store
	// Events carries feed changes and run progress to subscriptions.
	Events *ingest.Bus
	// Ingest runs the feeds; feed mutations go through it.
	Ingest *ingest.Runner
	// SaaS is the managed edition, where tenants may not use retention groups.
	SaaS bool
}

// Store is the store as the resolvers see it: the union of each noun's
// interface, declared beside that noun's resolvers. One field keeps the
// composition root (serve, the tests) a single assignment; the compiler
// checks *store.Store against every noun below.
type Store interface {
	FeedStore
	IoCStore
	TenantStore
	UserStore
	ViewStore
	OverviewStore
}

var _ Store = (*store.Store)(nil)

// OverviewStore is what the Overview page's resolver reads of the store.
type OverviewStore interface {
	Overview(ctx context.Context, now time.Time) (*store.Overview, error)
}
