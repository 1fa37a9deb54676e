package graph

import (
	"context"

	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

// TenantStore is what the tenant and tenant-group resolvers use of the
// store.
type TenantStore interface {
	TenantsFor(ctx context.Context, u *store.User, page store.Page) ([]*store.Tenant, error)
	TenantFor(ctx context.Context, u *store.User, id string) (*store.Tenant, error)
	CreateTenant(ctx context.Context, in store.TenantInput, rules store.TenantRules) (*store.Tenant, error)
	PatchTenant(ctx context.Context, id string, in store.TenantInput, rules store.TenantRules) (*store.Tenant, error)
	DeleteTenant(ctx context.Context, id string) (deletedGroupID string, err error)
	TenantGroups(ctx context.Context, page store.Page) ([]*store.TenantGroup, error)
	TenantGroup(ctx context.Context, id string) (*store.TenantGroup, error)
	TenantsOfGroup(ctx context.Context, groupID string) ([]*store.Tenant, error)
	CreateTenantGroup(ctx context.Context, in store.TenantGroupInput) (*store.TenantGroup, error)
	PatchTenantGroup(ctx context.Context, id string, in store.TenantGroupInput) (*store.TenantGroup, error)
	DeleteTenantGroup(ctx context.Context, id string) error
}

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
