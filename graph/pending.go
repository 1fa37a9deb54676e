package graph

// Resolvers of the slices still under construction. Each moves to its own
// file (feeds.go, iocs.go, tenants.go) when its issue lands.

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
func (r *Resolver) iocSources(ctx context.Context, obj *store.IoC) ([]*store.Sighting, error) {
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
func (r *Resolver) iocs(ctx context.Context, filter *model.IocFilter, orderBy *model.IocOrder, first *int, after *string) (*model.IocConnection, error) {
	return nil, errNotImplemented
}
func (r *Resolver) ioc(ctx context.Context, id string) (*store.IoC, error) {
	return nil, errNotImplemented
}
func (r *Resolver) sightingFeed(ctx context.Context, obj *store.Sighting) (*store.Feed, error) {
	return nil, errNotImplemented
}

func (r *Resolver) createTenant(ctx context.Context, input model.TenantInput) (*store.Tenant, error) {
	return nil, errNotImplemented
}
func (r *Resolver) updateTenant(ctx context.Context, id string, input model.TenantInput) (*store.Tenant, error) {
	return nil, errNotImplemented
}
func (r *Resolver) deleteTenant(ctx context.Context, id string) (bool, error) {
	return false, errNotImplemented
}
func (r *Resolver) createTenantGroup(ctx context.Context, input model.TenantGroupInput) (*store.TenantGroup, error) {
	return nil, errNotImplemented
}
func (r *Resolver) updateTenantGroup(ctx context.Context, id string, input model.TenantGroupInput) (*store.TenantGroup, error) {
	return nil, errNotImplemented
}
func (r *Resolver) deleteTenantGroup(ctx context.Context, id string) (bool, error) {
	return false, errNotImplemented
}
func (r *Resolver) tenants(ctx context.Context, limit *int, offset *int) ([]*store.Tenant, error) {
	return nil, errNotImplemented
}
func (r *Resolver) tenant(ctx context.Context, id string) (*store.Tenant, error) {
	return nil, errNotImplemented
}
func (r *Resolver) tenantGroups(ctx context.Context, limit *int, offset *int) ([]*store.TenantGroup, error) {
	return nil, errNotImplemented
}
func (r *Resolver) tenantGroup(ctx context.Context, id string) (*store.TenantGroup, error) {
	return nil, errNotImplemented
}
func (r *Resolver) groupOfTenant(ctx context.Context, obj *store.Tenant) (*store.TenantGroup, error) {
	return nil, errNotImplemented
}
func (r *Resolver) tenantGroupTenants(ctx context.Context, obj *store.TenantGroup) ([]*store.Tenant, error) {
	return nil, errNotImplemented
}
