package graph

// Placeholders until the ingestion core (issue 3) lands; replace each with its real resolver in feeds.go
// and delete this file.

import (
	"context"

	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

func (r *Resolver) feedStatus(ctx context.Context, obj *store.Feed) (store.FeedStatus, error) {
	return "", errNotImplemented
}
func (r *Resolver) feedHasPassword(ctx context.Context, obj *store.Feed) (bool, error) {
	return false, errNotImplemented
}
func (r *Resolver) feedIocCount(ctx context.Context, obj *store.Feed) (int, error) {
	return 0, errNotImplemented
}
func (r *Resolver) feedCanEdit(ctx context.Context, obj *store.Feed) (bool, error) {
	return false, errNotImplemented
}
func (r *Resolver) feedCanDelete(ctx context.Context, obj *store.Feed) (bool, error) {
	return false, errNotImplemented
}
func (r *Resolver) feedCanReset(ctx context.Context, obj *store.Feed) (bool, error) {
	return false, errNotImplemented
}
func (r *Resolver) feedLastRun(ctx context.Context, obj *store.Feed) (*store.FeedRun, error) {
	return nil, errNotImplemented
}
func (r *Resolver) createCustomFeed(ctx context.Context, input model.CustomFeedInput) (*store.Feed, error) {
	return nil, errNotImplemented
}
func (r *Resolver) updateFeed(ctx context.Context, id string, input model.FeedUpdateInput) (*store.Feed, error) {
	return nil, errNotImplemented
}
func (r *Resolver) deleteFeed(ctx context.Context, id string) (bool, error) {
	return false, errNotImplemented
}
func (r *Resolver) setFeedEnabled(ctx context.Context, id string, enabled bool, confirm *bool) (*store.Feed, error) {
	return nil, errNotImplemented
}
func (r *Resolver) runFeedNow(ctx context.Context, id string) (*store.Feed, error) {
	return nil, errNotImplemented
}
func (r *Resolver) resetFeedCursor(ctx context.Context, id string) (*store.Feed, error) {
	return nil, errNotImplemented
}
func (r *Resolver) feeds(ctx context.Context, search *string, filter *model.FeedFilter, orderBy *model.FeedOrder, first *int, after *string) (*model.FeedConnection, error) {
	return nil, errNotImplemented
}
func (r *Resolver) feed(ctx context.Context, id string) (*store.Feed, error) {
	return nil, errNotImplemented
}
func (r *Resolver) feedRuns(ctx context.Context, feedID string, first *int) ([]*store.FeedRun, error) {
	return nil, errNotImplemented
}
func (r *Resolver) sightingFeed(ctx context.Context, obj *store.Sighting) (*store.Feed, error) {
	return nil, errNotImplemented
}
