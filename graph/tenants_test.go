package graph_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/99designs/gqlgen/client"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// tenantsClient is an in-process GraphQL client acting as user, on a
// resolver of the given edition.
func tenantsClient(t *testing.T, st *store.Store, user *store.User, saas bool) *client.Client {
	t.Helper()
	srv := handler.New(graph.NewSchema(&graph.Resolver{Store: st, SaaS: saas}))
	srv.AddTransport(transport.POST{})
	srv.SetErrorPresenter(graph.ErrorPresenter)
	return client.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), user)))
	}))
}

type gqlError struct {
	Message    string
	Extensions struct{ Code, Field string }
}

// gqlErrors runs q and returns its errors; data goes into resp when non-nil.
func gqlErrors(t *testing.T, c *client.Client, q string, resp any, opts ...client.Option) []gqlError {
	t.Helper()
	raw, err := c.RawPost(q, opts...)
	if err != nil {
		t.Fatalf("post %s: %v", q, err)
	}
	if resp != nil && raw.Data != nil {
		b, _ := json.Marshal(raw.Data)
		if err := json.Unmarshal(b, resp); err != nil {
			t.Fatalf("data: %v", err)
		}
	}
	var errs []gqlError
	if raw.Errors != nil {
		if err := json.Unmarshal(raw.Errors, &errs); err != nil {
			t.Fatalf("errors: %v: %s", err, raw.Errors)
		}
	}
	return errs
}

func wantCode(t *testing.T, errs []gqlError, code, field string) {
	t.Helper()
	if len(errs) != 1 || errs[0].Extensions.Code != code || errs[0].Extensions.Field != field {
		t.Errorf("errors = %+v, want one %s on field %q", errs, code, field)
	}
}

type tenantGQL struct {
	ID, Name, Contact, ContactEmail, Info, RetentionGroup, AuthenticationMethod, OrgID, GroupName, CreatedAt string
	MfaEnabled                                                                                               bool
	IngestionLimit                                                                                           *int
	DsNum, UserNum                                                                                           int
	SsoConfig                                                                                                *struct {
		AllowClockSkew *bool
		IssuerURL      *string `json:"issuerUrl"`
	}
	Group *struct{ ID, Name string }
}

const tenantFields = `id name contact contactEmail info retentionGroup authenticationMethod orgId groupName createdAt
  mfaEnabled ingestionLimit dsNum userNum ssoConfig { allowClockSkew issuerUrl } group { id name }`

type groupGQL struct {
	ID, Name, Logo, OrgID string
	TenantIds             []string
	Tenants               []struct {
		ID    string
		Group *struct{ Name string }
	}
}

const groupFields = `id name logo orgId tenantIds tenants { id group { name } }`

func TestTenantsGraphQL(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		root, err := st.CreateUser(ctx, "root", "password1", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := tenantsClient(t, st, root, false)

		var created struct{ CreateTenant tenantGQL }
		errs := gqlErrors(t, c, `mutation($in: TenantInput!) { createTenant(input: $in) { `+tenantFields+` } }`, &created,
			client.Var("in", map[string]any{"name": " Acme ", "contactEmail": "soc@acme.example", "info": "hello",
				"retentionGroup": "gold", "mfaEnabled": true, "authenticationMethod": "sso_saml", "ingestionLimit": 100,
				"ssoConfig": map[string]any{"allowClockSkew": true, "issuerUrl": "https://idp.example"}}))
		tn := created.CreateTenant
		org, _ := st.OrgID(ctx)
		if len(errs) != 0 || tn.Name != "Acme" || tn.Info != `"hello"` || tn.RetentionGroup != "gold" || !tn.MfaEnabled ||
			tn.AuthenticationMethod != "sso_saml" || tn.IngestionLimit == nil || *tn.IngestionLimit != 100 ||
			tn.SsoConfig == nil || tn.SsoConfig.IssuerURL == nil || *tn.SsoConfig.IssuerURL != "https://idp.example" ||
			tn.OrgID != org || tn.Group != nil || tn.CreatedAt == "" {
			t.Fatalf("createTenant = %+v, %+v", tn, errs)
		}
		if row, err := st.Tenant(ctx, tn.ID); err != nil || row.ContactEmail != "soc@acme.example" {
			t.Errorf("stored = %+v, %v", row, err)
		}

		// The same validation as REST, with GraphQL field names.
		for name, tc := range map[string]struct {
			in    map[string]any
			saas  bool
			field string
		}{
			"blank name":        {map[string]any{"name": " "}, false, "name"},
			"bad auth method":   {map[string]any{"name": "x", "authenticationMethod": "ldap"}, false, "authenticationMethod"},
			"bad callback type": {map[string]any{"name": "x", "ssoConfig": map[string]any{"idpCallbackType": "post"}}, false, "ssoConfig"},
			"negative limit":    {map[string]any{"name": "x", "ingestionLimit": -5}, false, "ingestionLimit"},
			"bad email":         {map[string]any{"name": "x", "contactEmail": "x@"}, false, "contactEmail"},
			"retention on SaaS": {map[string]any{"name": "x", "retentionGroup": "gold"}, true, "retentionGroup"},
		} {
			t.Run(name, func(t *testing.T) {
				errs := gqlErrors(t, tenantsClient(t, st, root, tc.saas),
					`mutation($in: TenantInput!) { createTenant(input: $in) { id } }`, nil, client.Var("in", tc.in))
				wantCode(t, errs, graph.CodeBadUserInput, tc.field)
			})
		}

		// updateTenant changes only what is given.
		var updated struct{ UpdateTenant tenantGQL }
		errs = gqlErrors(t, c, `mutation($id: ID!) { updateTenant(id: $id, input: {name: "Acme 2", contact: "Ann"}) { `+tenantFields+` } }`,
			&updated, client.Var("id", tn.ID))
		if u := updated.UpdateTenant; len(errs) != 0 || u.Name != "Acme 2" || u.Contact != "Ann" || u.Info != `"hello"` ||
			u.IngestionLimit == nil || *u.IngestionLimit != 100 || !u.MfaEnabled {
			t.Errorf("updateTenant = %+v, %+v", u, errs)
		}
		// null clears the ingestion limit and the SSO configuration.
		errs = gqlErrors(t, c, `mutation($id: ID!) { updateTenant(id: $id, input: {name: "Acme 2", ingestionLimit: null, ssoConfig: null}) { `+tenantFields+` } }`,
			&updated, client.Var("id", tn.ID))
		if u := updated.UpdateTenant; len(errs) != 0 || u.IngestionLimit != nil || u.SsoConfig != nil || u.Contact != "Ann" {
			t.Errorf("updateTenant with nulls = %+v, %+v", u, errs)
		}
		wantCode(t, gqlErrors(t, c, `mutation { updateTenant(id: "nope", input: {name: "x"}) { id } }`, nil), graph.CodeNotFound, "")
		wantCode(t, gqlErrors(t, c, `{ tenant(id: "nope") { id } }`, nil), graph.CodeNotFound, "")

		// Lists by creation, with limit and offset.
		for _, n := range []string{"b", "c"} {
			if _, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some(n)}, store.TenantRules{}); err != nil {
				t.Fatal(err)
			}
		}
		var list struct{ Tenants []tenantGQL }
		gqlErrors(t, c, `{ tenants { name } }`, &list)
		if names := tenantNames(list.Tenants); !slices.Equal(names, []string{"Acme 2", "b", "c"}) {
			t.Errorf("tenants = %v", names)
		}
		gqlErrors(t, c, `{ tenants(limit: 1, offset: 1) { name } }`, &list)
		if names := tenantNames(list.Tenants); !slices.Equal(names, []string{"b"}) {
			t.Errorf("tenants page = %v", names)
		}
		wantCode(t, gqlErrors(t, c, `{ tenants(limit: 0) { name } }`, nil), graph.CodeBadUserInput, "limit")
		wantCode(t, gqlErrors(t, c, `{ tenantGroups(offset: -1) { name } }`, nil), graph.CodeBadUserInput, "offset")

		var one struct{ Tenant tenantGQL }
		gqlErrors(t, c, `query($id: ID!) { tenant(id: $id) { `+tenantFields+` } }`, &one, client.Var("id", tn.ID))
		if one.Tenant.Name != "Acme 2" {
			t.Errorf("tenant = %+v", one.Tenant)
		}

		var del struct{ DeleteTenant bool }
		if errs := gqlErrors(t, c, `mutation($id: ID!) { deleteTenant(id: $id) }`, &del, client.Var("id", tn.ID)); len(errs) != 0 || !del.DeleteTenant {
			t.Errorf("deleteTenant = %v, %+v", del.DeleteTenant, errs)
		}
		wantCode(t, gqlErrors(t, c, `mutation($id: ID!) { deleteTenant(id: $id) }`, nil, client.Var("id", tn.ID)), graph.CodeNotFound, "")
	})
}

func tenantNames(ts []tenantGQL) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestTenantGroupsGraphQL(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		root, _ := st.CreateUser(ctx, "root", "password1", store.ScopeRoot, nil)
		c := tenantsClient(t, st, root, false)
		var ids []string
		for _, n := range []string{"a", "b", "c"} {
			tn, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some(n)}, store.TenantRules{})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, tn.ID)
		}
		a, b, cc := ids[0], ids[1], ids[2]

		var created struct{ CreateTenantGroup groupGQL }
		errs := gqlErrors(t, c, `mutation($in: TenantGroupInput!) { createTenantGroup(input: $in) { `+groupFields+` } }`, &created,
			client.Var("in", map[string]any{"name": "Gold", "tenants": []string{b, a}, "logo": "g.png"}))
		g := created.CreateTenantGroup
		if len(errs) != 0 || g.Name != "Gold" || g.Logo != "g.png" || !slices.Equal(g.TenantIds, []string{a, b}) ||
			len(g.Tenants) != 2 || g.Tenants[0].ID != a || g.Tenants[0].Group == nil || g.Tenants[0].Group.Name != "Gold" {
			t.Fatalf("createTenantGroup = %+v, %+v", g, errs)
		}

		var withGroup struct{ Tenant tenantGQL }
		gqlErrors(t, c, `query($id: ID!) { tenant(id: $id) { `+tenantFields+` } }`, &withGroup, client.Var("id", a))
		if withGroup.Tenant.GroupName != "Gold" || withGroup.Tenant.Group == nil || withGroup.Tenant.Group.ID != g.ID {
			t.Errorf("Tenant.group = %+v", withGroup.Tenant)
		}

		create := `mutation($in: TenantGroupInput!) { createTenantGroup(input: $in) { id } }`
		wantCode(t, gqlErrors(t, c, create, nil, client.Var("in", map[string]any{"name": "x", "tenants": []string{a}})), graph.CodeConflict, "")
		wantCode(t, gqlErrors(t, c, create, nil, client.Var("in", map[string]any{"name": "Gold", "tenants": []string{cc}})), graph.CodeConflict, "")
		wantCode(t, gqlErrors(t, c, create, nil, client.Var("in", map[string]any{"name": "x"})), graph.CodeBadUserInput, "tenants")
		wantCode(t, gqlErrors(t, c, create, nil, client.Var("in", map[string]any{"name": "x", "tenants": []string{}})), graph.CodeBadUserInput, "tenants")
		wantCode(t, gqlErrors(t, c, create, nil, client.Var("in", map[string]any{"name": "x", "tenants": []string{"nope"}})), graph.CodeBadUserInput, "tenants")
		if groups, _ := st.TenantGroups(ctx, store.Page{}); len(groups) != 1 {
			t.Errorf("refused creates stored groups: %d", len(groups))
		}

		// updateTenantGroup: a given list replaces the membership, an absent one keeps it.
		var updated struct{ UpdateTenantGroup groupGQL }
		gqlErrors(t, c, `mutation($id: ID!, $in: TenantGroupInput!) { updateTenantGroup(id: $id, input: $in) { `+groupFields+` } }`,
			&updated, client.Var("id", g.ID), client.Var("in", map[string]any{"name": "Platinum", "tenants": []string{cc}}))
		if u := updated.UpdateTenantGroup; u.Name != "Platinum" || !slices.Equal(u.TenantIds, []string{cc}) || u.Logo != "g.png" {
			t.Errorf("updateTenantGroup = %+v", u)
		}
		gqlErrors(t, c, `mutation($id: ID!) { updateTenantGroup(id: $id, input: {name: "Platinum"}) { `+groupFields+` } }`,
			&updated, client.Var("id", g.ID))
		if u := updated.UpdateTenantGroup; !slices.Equal(u.TenantIds, []string{cc}) {
			t.Errorf("updateTenantGroup without tenants = %+v", u)
		}

		var list struct{ TenantGroups []groupGQL }
		gqlErrors(t, c, `{ tenantGroups { `+groupFields+` } }`, &list)
		if len(list.TenantGroups) != 1 || list.TenantGroups[0].Name != "Platinum" {
			t.Errorf("tenantGroups = %+v", list.TenantGroups)
		}

		// A tenant-scoped caller sees its own tenant, no groups, and writes nothing.
		u, _ := st.CreateUser(ctx, "owner", "password2", store.ScopeTenant, &cc)
		tc := tenantsClient(t, st, u, false)
		var own struct{ Tenants []tenantGQL }
		gqlErrors(t, tc, `{ tenants { `+tenantFields+` } }`, &own)
		if len(own.Tenants) != 1 || own.Tenants[0].ID != cc || own.Tenants[0].Group != nil ||
			own.Tenants[0].GroupName != "Platinum" || own.Tenants[0].UserNum != 1 {
			t.Errorf("tenant caller's tenants = %+v", own.Tenants)
		}
		wantCode(t, gqlErrors(t, tc, `query($id: ID!) { tenant(id: $id) { id } }`, nil, client.Var("id", a)), graph.CodeNotFound, "")
		wantCode(t, gqlErrors(t, tc, `{ tenantGroups { id } }`, nil), graph.CodeForbidden, "")
		wantCode(t, gqlErrors(t, tc, `query($id: ID!) { tenantGroup(id: $id) { id } }`, nil, client.Var("id", g.ID)), graph.CodeForbidden, "")
		wantCode(t, gqlErrors(t, tc, `mutation { createTenant(input: {name: "x"}) { id } }`, nil), graph.CodeForbidden, "")
		wantCode(t, gqlErrors(t, tc, `mutation($id: ID!) { deleteTenantGroup(id: $id) }`, nil, client.Var("id", g.ID)), graph.CodeForbidden, "")

		// Deleting a group keeps its tenants; deleting the last tenant deletes its group.
		var del struct{ DeleteTenantGroup bool }
		gqlErrors(t, c, `mutation($id: ID!) { deleteTenantGroup(id: $id) }`, &del, client.Var("id", g.ID))
		if !del.DeleteTenantGroup {
			t.Error("deleteTenantGroup = false")
		}
		if tn, err := st.Tenant(ctx, cc); err != nil || tn.GroupID != nil {
			t.Errorf("tenant after its group's delete = %+v, %v", tn, err)
		}
		wantCode(t, gqlErrors(t, c, `mutation($id: ID!) { deleteTenantGroup(id: $id) }`, nil, client.Var("id", g.ID)), graph.CodeNotFound, "")
		gqlErrors(t, c, create, &created, client.Var("in", map[string]any{"name": "Solo", "tenants": []string{a}}))
		gqlErrors(t, c, `mutation($id: ID!) { deleteTenant(id: $id) }`, nil, client.Var("id", a))
		wantCode(t, gqlErrors(t, c, `query($id: ID!) { tenantGroup(id: $id) { id } }`, nil, client.Var("id", created.CreateTenantGroup.ID)), graph.CodeNotFound, "")
	})
}
