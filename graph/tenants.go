package graph

import (
	"context"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

// The tenant resolvers turn GraphQL inputs into the store's inputs, so that
// REST and GraphQL share one validation (store.TenantInput and
// store.TenantGroupInput). A null input field means "not given", except
// ssoConfig and ingestionLimit, which null clears (as in the REST API).

func (r *Resolver) tenantRules() store.TenantRules { return store.TenantRules{SaaS: r.SaaS} }

func tenantInput(in model.TenantInput) store.TenantInput {
	out := store.TenantInput{
		Name:                 store.Some(in.Name),
		Contact:              store.FromPtr(in.Contact),
		ContactEmail:         store.FromPtr(in.ContactEmail),
		ContactPhone:         store.FromPtr(in.ContactPhone),
		Address:              store.FromPtr(in.Address),
		Info:                 store.FromPtr(in.Info),
		RetentionGroup:       store.FromPtr(in.RetentionGroup),
		MFAEnabled:           store.FromPtr(in.MfaEnabled),
		AuthenticationMethod: store.FromPtr(in.AuthenticationMethod),
	}
	if c, given := in.SsoConfig.ValueOK(); given && c == nil {
		out.SSOConfig = store.Null[store.SSOConfig]()
	} else if given {
		out.SSOConfig = store.Some(store.SSOConfig{
			AllowClockSkew: c.AllowClockSkew, IdpCertificate: c.IdpCertificate, IdpMetadata: c.IdpMetadata,
			IdpCallbackType: c.IdpCallbackType, IssuerURL: c.IssuerURL, SSOConfigMethod: c.SsoConfigMethod,
			SSOEntryPoint: c.SsoEntryPoint,
		})
	}
	if n, given := in.IngestionLimit.ValueOK(); given && n == nil {
		out.IngestionLimit = store.Null[int64]()
	} else if given {
		out.IngestionLimit = store.Some(int64(*n))
	}
	return out
}

func tenantGroupInput(in model.TenantGroupInput) store.TenantGroupInput {
	out := store.TenantGroupInput{Name: store.Some(in.Name), Logo: store.FromPtr(in.Logo)}
	if in.Tenants != nil {
		out.Tenants = store.Some(in.Tenants)
	}
	return out
}

func (r *Resolver) createTenant(ctx context.Context, input model.TenantInput) (*store.Tenant, error) {
	return r.Store.CreateTenant(ctx, tenantInput(input), r.tenantRules())
}

func (r *Resolver) updateTenant(ctx context.Context, id string, input model.TenantInput) (*store.Tenant, error) {
	return r.Store.PatchTenant(ctx, id, tenantInput(input), r.tenantRules())
}

func (r *Resolver) deleteTenant(ctx context.Context, id string) (bool, error) {
	if _, err := r.Store.DeleteTenant(ctx, id); err != nil {
		return false, err
	}
	// Its users' open websockets, here and on other instances, close.
	r.Events.PublishRevocation(events.Revocation{TenantID: id})
	return true, nil
}

func (r *Resolver) createTenantGroup(ctx context.Context, input model.TenantGroupInput) (*store.TenantGroup, error) {
	return r.Store.CreateTenantGroup(ctx, tenantGroupInput(input))
}

func (r *Resolver) updateTenantGroup(ctx context.Context, id string, input model.TenantGroupInput) (*store.TenantGroup, error) {
	return r.Store.PatchTenantGroup(ctx, id, tenantGroupInput(input))
}

func (r *Resolver) deleteTenantGroup(ctx context.Context, id string) (bool, error) {
	if err := r.Store.DeleteTenantGroup(ctx, id); err != nil {
		return false, err
	}
	return true, nil
}

// tenants lists what the caller may see: every tenant for root, its own
// tenant for a tenant-scoped user.
func (r *Resolver) tenants(ctx context.Context, limit *int, offset *int) ([]*store.Tenant, error) {
	u, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	page, err := store.NewPage(limit, offset)
	if err != nil {
		return nil, err
	}
	return r.Store.TenantsFor(ctx, u, page)
}

func (r *Resolver) tenant(ctx context.Context, id string) (*store.Tenant, error) {
	u, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	return r.Store.TenantFor(ctx, u, id)
}

// tenantGroups needs root: a group spans tenants.
func (r *Resolver) tenantGroups(ctx context.Context, limit *int, offset *int) ([]*store.TenantGroup, error) {
	if _, err := auth.Require(ctx, store.ScopeRoot); err != nil {
		return nil, err
	}
	page, err := store.NewPage(limit, offset)
	if err != nil {
		return nil, err
	}
	return r.Store.TenantGroups(ctx, page)
}

func (r *Resolver) tenantGroup(ctx context.Context, id string) (*store.TenantGroup, error) {
	if _, err := auth.Require(ctx, store.ScopeRoot); err != nil {
		return nil, err
	}
	return r.Store.TenantGroup(ctx, id)
}

// groupOfTenant is null for an ungrouped tenant, and for a tenant-scoped
// caller, who sees its group's name (groupName) but not the other members.
func (r *Resolver) groupOfTenant(ctx context.Context, obj *store.Tenant) (*store.TenantGroup, error) {
	if obj.GroupID == nil {
		return nil, nil
	}
	if u, err := auth.UserFrom(ctx); err != nil || u.Scope != store.ScopeRoot {
		return nil, nil
	}
	return r.Store.TenantGroup(ctx, *obj.GroupID)
}

func (r *Resolver) tenantGroupTenants(ctx context.Context, obj *store.TenantGroup) ([]*store.Tenant, error) {
	return r.Store.TenantsOfGroup(ctx, obj.ID)
}
