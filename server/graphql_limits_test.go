package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// introspectionQuery is the query GraphiQL and codegen tools send.
const introspectionQuery = `query IntrospectionQuery { __schema { queryType { name } mutationType { name } subscriptionType { name }
  types { ...FullType } directives { name description locations args { ...InputValue } } } }
fragment FullType on __Type { kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue } interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
  ofType { kind name ofType { kind name ofType { kind name } } } } } } } }`

func aliases(n int, field string) string {
	var b strings.Builder
	b.WriteString("{ ")
	for i := range n {
		fmt.Fprintf(&b, "a%d: %s ", i, field)
	}
	b.WriteString("}")
	return b.String()
}

func bigBodies(c *server.Config) { c.BodyLimit = 1 << 20 }

func TestGraphQLCostLimits(t *testing.T) {
	f := newFixture(t, storetest.NewSQLite(t), bigBodies)
	for name, tc := range map[string]struct {
		query string
		want  string // substring of the body
	}{
		"too deep": {
			"{ tenantGroup(id: \"g\") { " + strings.Repeat("tenants { group { ", 5) + "id" + strings.Repeat(" } }", 5) + " } }",
			"nests 12 levels deep, which exceeds the limit of 10",
		},
		"too costly": {
			`{ iocs(first: 100000) { nodes { value tags sources { source score } } } }`,
			"which exceeds the limit of 20000",
		},
		"300 aliases of a counted text search": {
			aliases(300, `iocs(first: 1, filter: {search: "x"}) { totalCount }`),
			"operation has 300 aliased fields, which exceeds the limit of 50",
		},
		"40 aliases of a counted text search cost what they scan": {
			aliases(40, `iocs(first: 1, filter: {search: "x"}) { totalCount }`),
			"which exceeds the limit of 20000",
		},
		"4,000 aliases of introspection": {
			aliases(4000, `__schema { types { name fields { name } } }`),
			"operation selects more than 1000 fields, which exceeds the limit of 1000",
		},
		"a few introspections cost the schema's size each": {
			aliases(40, `__schema { queryType { name } }`),
			"which exceeds the limit of 20000",
		},
		"fragments spread many times count every field": {
			`query { ...A ...A ...A ...A ...A ...A ...A ...A ...A ...A ...A ...A }
			fragment A on Query { me { username scope } ` + strings.Repeat("__typename ", 100) + ` }`,
			"operation selects more than 1000 fields",
		},
		"deep introspection is allowed": {
			`{ __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } } }`,
			`"__schema"`,
		},
		"the tools' introspection query is allowed": {introspectionQuery, `"queryType"`},
		"a large page of a dashboard table is allowed": {
			`{ me { username } iocs(first: 500, filter: {search: "x"}) { totalCount nodes { id type value score tags expirationDate } } }`,
			`"me"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := f.graphql("admin", adminKey, tc.query)
			refused := strings.Contains(string(r.body), "exceeds the limit")
			if allowed := strings.HasSuffix(name, "allowed"); allowed == refused {
				t.Errorf("refused = %v: %.400s", refused, r.body)
			}
			if !strings.Contains(string(r.body), tc.want) {
				t.Errorf("body = %.400s, want it to contain %s", r.body, tc.want)
			}
			if refused && (strings.Contains(string(r.body), `"data":{`) || !strings.Contains(string(r.body), `"code":"BAD_USER_INPUT"`)) {
				t.Errorf("a refused operation ran or has no code: %.400s", r.body)
			}
		})
	}
}

// TestRefusedOperationDoesNotRun: a mutation over the limits changes
// nothing, since the limits are checked before any resolver.
func TestRefusedOperationDoesNotRun(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st, bigBodies)
		r := f.graphql("admin", adminKey, "mutation "+aliases(60, `createApiKey(name: "k") { key }`))
		if !strings.Contains(string(r.body), "exceeds the limit of 50") {
			t.Fatalf("60 aliased mutations: %.400s", r.body)
		}
		admin, err := st.UserByName(context.Background(), "admin")
		if err != nil {
			t.Fatal(err)
		}
		keys, err := st.APIKeys(context.Background(), admin.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 {
			t.Errorf("admin has %d keys after a refused operation, want 1", len(keys))
		}
		var body struct{ Data json.RawMessage }
		_ = json.Unmarshal(r.body, &body)
		if len(body.Data) > 0 && string(body.Data) != "null" {
			t.Errorf("refused operation has data: %s", body.Data)
		}
	})
}
