package graph

// Placeholders until the tenants API (issue 4) lands; replace each with its real resolver in tenants.go
// and delete this file.

import (
	"context"

	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

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
