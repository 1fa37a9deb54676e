package graph

// Placeholders of issue 6 (the lead's): facets and bulk lookup. Each moves to its own file
// when built.

import (
	"context"

	"github.com/tifeeds/tifeeds/graph/model"
)

func (r *Resolver) feedFacets(ctx context.Context, obj *model.FeedConnection) ([]*model.FeedFacet, error) {
	return nil, errNotImplemented
}

func (r *Resolver) lookupIocs(ctx context.Context, values []string) ([]*model.IocLookup, error) {
	return nil, errNotImplemented
}
