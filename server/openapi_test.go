package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/tifeeds/tifeeds/server/openapi"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestOpenAPIDocumentServed: the document is public, JSON, and revalidated
// by its ETag.
func TestOpenAPIDocumentServed(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		for name, creds := range map[string][2]string{"no credentials": {}, "wrong credentials": {"admin", "nope"},
			"an API key": {"admin", adminKey}} {
			r := f.do("GET", api+"/openapi.json", creds[0], creds[1], "", nil)
			if r.status != 200 || r.header.Get("Content-Type") != "application/json" || !bytes.Equal(r.body, openapi.Document) {
				t.Fatalf("%s: %d %s, %d bytes", name, r.status, r.header.Get("Content-Type"), len(r.body))
			}
		}
		r := f.do("GET", api+"/openapi.json", "", "", "", nil)
		var doc struct {
			OpenAPI string
			Info    struct{ Title string }
		}
		if err := json.Unmarshal(r.body, &doc); err != nil || doc.OpenAPI != "3.1.0" || doc.Info.Title == "" {
			t.Errorf("document %+v, %v", doc, err)
		}
		etag := r.header.Get("ETag")
		if len(etag) < 10 || etag[0] != '"' || r.header.Get("Cache-Control") != "no-cache" {
			t.Fatalf("ETag %q, Cache-Control %q", etag, r.header.Get("Cache-Control"))
		}
		for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
			r := f.do("GET", api+"/openapi.json", "", "", "", map[string]string{"If-None-Match": inm})
			if r.status != http.StatusNotModified || len(r.body) != 0 || r.header.Get("ETag") != etag {
				t.Errorf("If-None-Match %s: %d, %d bytes", inm, r.status, len(r.body))
			}
		}
		if r := f.do("GET", api+"/openapi.json", "", "", "", map[string]string{"If-None-Match": `"other"`}); r.status != 200 {
			t.Errorf("a stale ETag: %d", r.status)
		}
	})
}

// TestRESTMethodsAndPaths: a path's other methods are 405 with Allow, a
// path the API lacks is 404, both JSON errors.
func TestRESTMethodsAndPaths(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		for _, tc := range []struct{ method, path, allow string }{
			{"PUT", "/tenants/abc", "DELETE, GET, HEAD, PATCH"},
			{"POST", "/tenants/abc", "DELETE, GET, HEAD, PATCH"},
			{"DELETE", "/tenants", "GET, HEAD, POST"},
			{"PATCH", "/tenants/", "GET, HEAD, POST"},
			{"PUT", "/tenant_groups/abc", "DELETE, GET, HEAD, PATCH"},
			{"DELETE", "/tenant_groups/", "GET, HEAD, POST"},
			{"POST", "/openapi.json", "GET, HEAD"},
			{"OPTIONS", "/tenants", "GET, HEAD, POST"},
		} {
			for _, user := range []string{"", "admin"} {
				r := f.do(tc.method, api+tc.path, user, adminKey, "", nil)
				wantError(t, r, http.StatusMethodNotAllowed, "method_not_allowed", "")
				if got := r.header.Get("Allow"); got != tc.allow {
					t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
				}
			}
		}
		for _, path := range []string{"/feeds", "/tenants/a/b", "/openapi.yaml", "/"} {
			wantError(t, f.rest("GET", path, ""), http.StatusNotFound, "not_found", "")
		}
	})
}

// TestRESTBodiesMustBeJSON: a write whose body is not declared JSON is
// 415, after authentication and scope, and changes nothing.
func TestRESTBodiesMustBeJSON(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixtureWithoutTenant(t, st)
		id := f.createTenantREST(`{"cust_name":"Acme"}`)["cust_id"].(string)
		for _, contentType := range []string{"text/plain", "application/x-www-form-urlencoded", "", "application/jsonx", "json"} {
			header := map[string]string{"Content-Type": contentType}
			before := tenantCount(t, st)
			wantError(t, f.do("POST", api+"/tenants/", "admin", adminKey, `{"cust_name":"x"}`, header),
				http.StatusUnsupportedMediaType, "unsupported_media_type", "")
			wantError(t, f.do("PATCH", api+"/tenants/"+id, "admin", adminKey, `{"cust_name":"x"}`, header),
				http.StatusUnsupportedMediaType, "unsupported_media_type", "")
			wantError(t, f.do("POST", api+"/tenant_groups", "admin", adminKey, `{"tgrp_name":"g","tenants":["`+id+`"]}`, header),
				http.StatusUnsupportedMediaType, "unsupported_media_type", "")
			if got, _ := st.Tenant(t.Context(), id); tenantCount(t, st) != before || got.Name != "Acme" {
				t.Errorf("Content-Type %q: a refused write changed tenants", contentType)
			}
		}
		// Credentials and scope are checked first.
		wantError(t, f.do("POST", api+"/tenants/", "", "", `{"cust_name":"x"}`, map[string]string{"Content-Type": "text/plain"}),
			http.StatusUnauthorized, "unauthenticated", "")
		// Parameters of the JSON type are fine.
		r := f.do("POST", api+"/tenants/", "admin", adminKey, `{"cust_name":"charset"}`,
			map[string]string{"Content-Type": "application/json; charset=utf-8"})
		if r.status != http.StatusCreated {
			t.Errorf("application/json; charset=utf-8: %d %s", r.status, r.body)
		}
	})
}
