package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func (f *fixture) graphqlVars(user, key, query string, vars map[string]any) response {
	f.t.Helper()
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return f.do("POST", "/graphql", user, key, string(b), nil)
}

// TestHostileStrings: NUL bytes and over-long strings are refused as the
// client's error wherever they come in, on both databases (PostgreSQL
// refuses NUL in text, which used to surface as a 500).
func TestHostileStrings(t *testing.T) {
	long := strings.Repeat("a", 5000)
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st, bigBodies)
		rest := map[string]struct{ method, path, body string }{
			"NUL in cust_name":            {"POST", "/connect/api/v1/tenants", `{"cust_name": "a\u0000b"}`},
			"over-long cust_name":         {"POST", "/connect/api/v1/tenants", `{"cust_name": "` + long + `"}`},
			"NUL in a nested field":       {"POST", "/connect/api/v1/tenants", `{"cust_name": "x", "sso_config": {"issuer_url": "\u0000"}}`},
			"NUL in a group's tenant ids": {"POST", "/connect/api/v1/tenant_groups", `{"tgrp_name": "g", "tenants": ["\u0000"]}`},
			"NUL in a query parameter":    {"GET", "/api/export/iocs.csv?search=%00", ""},
			"over-long search parameter":  {"GET", "/api/export/iocs.csv?search=" + long, ""},
			"NUL in a login":              {"POST", "/api/login", `{"username": "admin\u0000", "password": "x"}`},
		}
		for name, tc := range rest {
			t.Run("REST "+name, func(t *testing.T) {
				r := f.do(tc.method, tc.path, "admin", adminKey, tc.body, nil)
				if r.status != 400 || errorCode(t, r.body) != "invalid_string" {
					t.Errorf("status %d: %s, want 400 invalid_string", r.status, r.body)
				}
			})
		}
		gql := map[string]struct {
			query string
			vars  map[string]any
		}{
			"NUL in a search variable":         {`query($s: String) { iocs(filter: {search: $s}) { totalCount } }`, map[string]any{"s": "a\x00"}},
			"NUL in a search literal":          {`{ iocs(filter: {search: "a\u0000"}) { totalCount } }`, nil},
			"over-long search":                 {`query($s: String) { iocs(filter: {search: $s}) { totalCount } }`, map[string]any{"s": long + long + long + long + long + long + long + long + long + long + long}},
			"NUL in an input object":           {`mutation($in: TenantInput!) { createTenant(input: $in) { id } }`, map[string]any{"in": map[string]any{"name": "a\x00"}}},
			"NUL in a list of values":          {`query($v: [String!]!) { lookupIocs(values: $v) { input } }`, map[string]any{"v": []any{"1.2.3.4", "\x00"}}},
			"over-long API key name":           {`mutation { createApiKey(name: "` + long + `") { key } }`, nil},
			"bad enum in a variable":           {`query($t: ViewTable!) { views(table: $t) { id } }`, map[string]any{"t": "NOPE"}},
			"enum in another case":             {`query($t: ViewTable!) { views(table: $t) { id } }`, map[string]any{"t": "iocs"}},
			"enum in another case in an input": {`query($f: IocFilter) { iocs(filter: $f) { totalCount } }`, map[string]any{"f": map[string]any{"type": []any{"ipv4"}}}},
			"bad enum in an input list":        {`query($f: IocFilter) { iocs(filter: $f) { totalCount } }`, map[string]any{"f": map[string]any{"type": []any{"NOPE"}}}},
		}
		for name, tc := range gql {
			t.Run("GraphQL "+name, func(t *testing.T) {
				r := f.graphqlVars("admin", adminKey, tc.query, tc.vars)
				if !strings.Contains(string(r.body), `"BAD_USER_INPUT"`) {
					t.Errorf("status %d: %.300s, want BAD_USER_INPUT", r.status, r.body)
				}
				if strings.Contains(string(r.body), "INTERNAL") || strings.Contains(string(r.body), `"data":{`) {
					t.Errorf("not refused before running: %.300s", r.body)
				}
			})
		}
	})
}
