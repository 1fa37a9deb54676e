package server_test

import (
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestGraphQLCostLimits(t *testing.T) {
	f := newFixture(t, storetest.NewSQLite(t))
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
			"COMPLEXITY_LIMIT_EXCEEDED",
		},
		"deep introspection is allowed": {
			`{ __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } } }`,
			`"__schema"`,
		},
		"a large page of a dashboard table is allowed": {
			`{ me { username } iocs(first: 500) { totalCount nodes { id type value score tags expirationDate } } }`,
			`"me"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := f.graphql("admin", adminKey, tc.query)
			if strings.HasSuffix(name, "allowed") && strings.Contains(string(r.body), "LIMIT") {
				t.Errorf("refused: %.400s", r.body)
			}
			if !strings.Contains(string(r.body), tc.want) {
				t.Errorf("body = %.400s, want it to contain %s", r.body, tc.want)
			}
		})
	}
}
