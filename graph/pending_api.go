package graph

// Placeholders of issue 6 (the lead's): facets, saved views, bulk lookup and
// subscriptions. Each moves to its own file when built.

import (
	"context"

	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

func (r *Resolver) feedFacets(ctx context.Context, obj *model.FeedConnection) ([]*model.FeedFacet, error) {
	return nil, errNotImplemented
}
func (r *Resolver) lookupIocs(ctx context.Context, values []string) ([]*model.IocLookup, error) {
	return nil, errNotImplemented
}
func (r *Resolver) feedStatusChanged(ctx context.Context, feedID *string) (<-chan *store.Feed, error) {
	return nil, errNotImplemented
}
func (r *Resolver) feedRunProgress(ctx context.Context, feedID *string) (<-chan *model.FeedRunProgress, error) {
	return nil, errNotImplemented
}
