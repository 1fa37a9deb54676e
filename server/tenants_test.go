package server_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

const api = "/connect/api/v1"

// rest calls the REST API as the admin.
func (f *fixture) rest(method, path, body string) response {
	f.t.Helper()
	return f.do(method, api+path, "admin", adminKey, body, nil)
}

// data decodes the "data" member of a success body.
func data[T any](t *testing.T, r response) T {
	t.Helper()
	var env struct{ Data T }
	dec := json.NewDecoder(strings.NewReader(string(r.body)))
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("body is not {\"data\": ...}: %v: %s", err, r.body)
	}
	return env.Data
}

// wantError checks a JSON error's status, code and field.
func wantError(t *testing.T, r response, status int, code, field string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message, Field string }
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("status %d, body is not a JSON error: %s", r.status, r.body)
	}
	if r.status != status || e.Error.Code != code || e.Error.Field != field || e.Error.Message == "" {
		t.Errorf("got %d %s, want %d code %q field %q", r.status, r.body, status, code, field)
	}
}

// createTenantREST posts a tenant and returns its wire form.
func (f *fixture) createTenantREST(body string) map[string]any {
	f.t.Helper()
	r := f.rest("POST", "/tenants/", body)
	if r.status != http.StatusCreated {
		f.t.Fatalf("create tenant %s: %d %s", body, r.status, r.body)
	}
	return data[map[string]any](f.t, r)
}

func tenantCount(t *testing.T, st *store.Store) int {
	t.Helper()
	ts, err := st.Tenants(context.Background(), store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}

var tenantWireFields = []string{"address", "authentication_method", "contact", "contact_email", "contact_phone",
	"cust_id", "cust_name", "ds_num", "info", "ingestion_limit", "mfa_enabled", "org_id", "retention_group",
	"sso_config", "tgrp_name", "ts_created", "user_num"}

func TestTenantsRESTShapes(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixtureWithoutTenant(t, st)
		ctx := context.Background()
		org, _ := st.OrgID(ctx)

		full := f.createTenantREST(`{"cust_name":"Acme","contact":"Ann","contact_email":"soc@acme.example",
			"contact_phone":"+1 555","address":"1 Road","info":{"tier": 2},"retention_group":"gold",
			"mfa_enabled":true,"authentication_method":"sso_saml","ingestion_limit":1000,
			"sso_config":{"allow_clock_skew":true,"idp_certificate":"CERT","idp_metadata":"<xml/>",
			"idp_callback_type":"idp_initiated","issuer_url":"https://idp.example","sso_config_method":"metadata",
			"sso_entry_point":"https://idp.example/sso"}}`)
		if keys := slices.Sorted(maps.Keys(full)); !slices.Equal(keys, tenantWireFields) {
			t.Errorf("tenant fields = %v, want %v", keys, tenantWireFields)
		}
		id, _ := full["cust_id"].(string)
		if len(id) != 32 {
			t.Fatalf("cust_id = %v", full["cust_id"])
		}
		for field, want := range map[string]any{
			"cust_name": "Acme", "contact": "Ann", "contact_email": "soc@acme.example", "contact_phone": "+1 555",
			"address": "1 Road", "info": `{"tier":2}`, "retention_group": "gold", "mfa_enabled": true,
			"authentication_method": "sso_saml", "ingestion_limit": "1000", "org_id": org, "tgrp_name": "",
			"ds_num": 0.0, "user_num": 0.0,
		} {
			if full[field] != want {
				t.Errorf("%s = %#v, want %#v", field, full[field], want)
			}
		}
		ts, ok := full["ts_created"].(string)
		if n, err := strconv.ParseInt(ts, 10, 64); !ok || err != nil || n < 1700000000 {
			t.Errorf("ts_created = %#v, want epoch seconds as a string", full["ts_created"])
		}
		wantSSO := map[string]any{"allow_clock_skew": true, "idp_certificate": "CERT", "idp_metadata": "<xml/>",
			"idp_callback_type": "idp_initiated", "issuer_url": "https://idp.example", "sso_config_method": "metadata",
			"sso_entry_point": "https://idp.example/sso"}
		if !maps.Equal(full["sso_config"].(map[string]any), wantSSO) {
			t.Errorf("sso_config = %v", full["sso_config"])
		}
		row, err := st.Tenant(ctx, id)
		if err != nil || row.Name != "Acme" || row.IngestionLimit == nil || *row.IngestionLimit != 1000 ||
			row.SSOConfig == nil || *row.SSOConfig.IssuerURL != "https://idp.example" || row.Info != `{"tier":2}` {
			t.Errorf("stored row = %+v, %v", row, err)
		}

		// Without the trailing slash, and with only the name: defaults.
		r := f.rest("POST", "/tenants", `{"cust_name":"Bare"}`)
		if r.status != http.StatusCreated || r.header.Get("Location") == "" {
			t.Fatalf("POST /tenants: %d %s", r.status, r.body)
		}
		bare := data[map[string]any](t, r)
		if bare["authentication_method"] != "system_default" || bare["ingestion_limit"] != nil ||
			bare["info"] != "" || bare["mfa_enabled"] != false || bare["retention_group"] != "" {
			t.Errorf("defaults = %v", bare)
		}
		emptySSO := map[string]any{"allow_clock_skew": false, "idp_certificate": "", "idp_metadata": "",
			"idp_callback_type": "", "issuer_url": "", "sso_config_method": "", "sso_entry_point": ""}
		if !maps.Equal(bare["sso_config"].(map[string]any), emptySSO) {
			t.Errorf("sso_config of a tenant without SSO = %v", bare["sso_config"])
		}

		// GET by id answers {"data": {...}}, the same tenant as created.
		r = f.rest("GET", "/tenants/"+id, "")
		if r.status != 200 {
			t.Fatalf("GET tenant: %d %s", r.status, r.body)
		}
		if got := data[map[string]any](t, r); got["cust_id"] != id || got["ingestion_limit"] != "1000" {
			t.Errorf("GET tenant = %v", got)
		}
		wantError(t, f.rest("GET", "/tenants/no-such-tenant", ""), 404, "not_found", "")

		// The list is {"data": [...]}, by creation.
		r = f.rest("GET", "/tenants", "")
		list := data[[]map[string]any](t, r)
		if r.status != 200 || len(list) != 2 || list[0]["cust_id"] != id || list[1]["cust_name"] != "Bare" {
			t.Errorf("list = %d %s", r.status, r.body)
		}
	})
}

func TestTenantsRESTInfo(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		for name, tc := range map[string]struct{ body, want string }{
			"object":           {`{"cust_name":"x","info":{"a":[1, 2]}}`, `{"a":[1,2]}`},
			"plain string":     {`{"cust_name":"x","info":"hello"}`, `"hello"`},
			"string with JSON": {`{"cust_name":"x","info":"{\"a\":1}"}`, `{"a":1}`},
			"number":           {`{"cust_name":"x","info":7}`, `7`},
			"null":             {`{"cust_name":"x","info":null}`, ``},
		} {
			t.Run(name, func(t *testing.T) {
				got := f.createTenantREST(tc.body)
				if got["info"] != tc.want {
					t.Errorf("info = %#v, want %#v", got["info"], tc.want)
				}
				// What was read can be written back unchanged.
				b, _ := json.Marshal(map[string]any{"cust_name": "x", "info": got["info"]})
				r := f.rest("PATCH", "/tenants/"+got["cust_id"].(string), string(b))
				if again := data[map[string]any](t, r); again["info"] != tc.want {
					t.Errorf("info after write-back = %#v", again["info"])
				}
			})
		}
	})
}

func TestTenantsRESTPatch(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		orig := f.createTenantREST(`{"cust_name":"Acme","contact":"Ann","mfa_enabled":true,"ingestion_limit":5,
			"sso_config":{"issuer_url":"https://idp.example"},"info":{"k":"v"}}`)
		id := orig["cust_id"].(string)

		r := f.rest("PATCH", "/tenants/"+id, `{"cust_name":"Acme Ltd","address":"2 Street"}`)
		if r.status != 200 {
			t.Fatalf("PATCH: %d %s", r.status, r.body)
		}
		got := data[map[string]any](t, r)
		for _, k := range tenantWireFields {
			want := orig[k]
			switch k {
			case "cust_name":
				want = "Acme Ltd"
			case "address":
				want = "2 Street"
			}
			if !jsonEqual(got[k], want) {
				t.Errorf("after PATCH %s = %#v, want %#v", k, got[k], want)
			}
		}

		// A client may send back what it read, read-only fields and the
		// string form of ingestion_limit included.
		got["contact"] = "Bob"
		b, _ := json.Marshal(got)
		r = f.rest("PATCH", "/tenants/"+id, string(b))
		if back := data[map[string]any](t, r); r.status != 200 || back["contact"] != "Bob" || back["ingestion_limit"] != "5" || back["cust_id"] != id {
			t.Errorf("read-modify-write: %d %s", r.status, r.body)
		}

		// null resets a field to its default.
		r = f.rest("PATCH", "/tenants/"+id, `{"cust_name":"Acme Ltd","ingestion_limit":null,"sso_config":null,"mfa_enabled":null}`)
		if got := data[map[string]any](t, r); got["ingestion_limit"] != nil || got["mfa_enabled"] != false ||
			got["sso_config"].(map[string]any)["issuer_url"] != "" {
			t.Errorf("after null PATCH = %s", r.body)
		}

		before, _ := st.Tenant(context.Background(), id)
		wantError(t, f.rest("PATCH", "/tenants/"+id, `{"contact":"Eve"}`), 422, "invalid_field", "cust_name")
		wantError(t, f.rest("PATCH", "/tenants/"+id, `{"cust_name":"","contact":"Eve"}`), 422, "invalid_field", "cust_name")
		wantError(t, f.rest("PATCH", "/tenants/"+id, `{"cust_name":"X","contact":"Eve","authentication_method":"ldap"}`),
			422, "invalid_field", "authentication_method")
		wantError(t, f.rest("PATCH", "/tenants/no-such-tenant", `{"cust_name":"X"}`), 404, "not_found", "")
		after, _ := st.Tenant(context.Background(), id)
		if after.Contact != before.Contact || after.Name != before.Name || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Errorf("refused PATCHes changed the tenant: %+v", after)
		}
	})
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestTenantsRESTErrors(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		for name, tc := range map[string]struct {
			body        string
			status      int
			code, field string
		}{
			"malformed JSON":        {`{"cust_name":`, 400, "invalid_json", ""},
			"not an object":         {`["cust_name"]`, 400, "invalid_json", ""},
			"null body":             {`null`, 400, "invalid_json", ""},
			"empty body":            {``, 400, "invalid_json", ""},
			"trailing data":         {`{"cust_name":"a"} {}`, 400, "invalid_json", ""},
			"unknown field":         {`{"cust_name":"a","colour":"red"}`, 400, "unknown_field", "colour"},
			"name not a string":     {`{"cust_name":5}`, 400, "invalid_type", "cust_name"},
			"mfa not a bool":        {`{"cust_name":"a","mfa_enabled":"yes"}`, 400, "invalid_type", "mfa_enabled"},
			"limit not an integer":  {`{"cust_name":"a","ingestion_limit":"ten"}`, 400, "invalid_type", "ingestion_limit"},
			"limit a fraction":      {`{"cust_name":"a","ingestion_limit":1.5}`, 400, "invalid_type", "ingestion_limit"},
			"sso not an object":     {`{"cust_name":"a","sso_config":"saml"}`, 400, "invalid_type", "sso_config"},
			"sso unknown field":     {`{"cust_name":"a","sso_config":{"colour":"red"}}`, 400, "unknown_field", "sso_config.colour"},
			"sso field type":        {`{"cust_name":"a","sso_config":{"allow_clock_skew":"no"}}`, 400, "invalid_type", "sso_config.allow_clock_skew"},
			"missing cust_name":     {`{"contact":"a"}`, 422, "invalid_field", "cust_name"},
			"null cust_name":        {`{"cust_name":null}`, 422, "invalid_field", "cust_name"},
			"blank cust_name":       {`{"cust_name":"   "}`, 422, "invalid_field", "cust_name"},
			"unknown auth method":   {`{"cust_name":"a","authentication_method":"ldap"}`, 422, "invalid_field", "authentication_method"},
			"unknown callback type": {`{"cust_name":"a","sso_config":{"idp_callback_type":"post"}}`, 422, "invalid_field", "sso_config"},
			"negative limit":        {`{"cust_name":"a","ingestion_limit":-1}`, 422, "invalid_field", "ingestion_limit"},
			"bad email":             {`{"cust_name":"a","contact_email":"nobody"}`, 422, "invalid_field", "contact_email"},
			"over the body limit":   {`{"cust_name":"` + strings.Repeat("x", 2048) + `"}`, 413, "body_too_large", ""},
			"integer limit as text": {`{"cust_name":"a","ingestion_limit":"250"}`, 201, "", ""},
			"read-only fields":      {`{"cust_name":"a","cust_id":"mine","org_id":"o","ds_num":3,"ts_created":"1"}`, 201, "", ""},
		} {
			t.Run(name, func(t *testing.T) {
				before := tenantCount(t, st)
				r := f.rest("POST", "/tenants/", tc.body)
				if tc.status == 201 {
					got := data[map[string]any](t, r)
					if r.status != 201 || got["cust_id"] == "mine" || got["ds_num"] != 0.0 {
						t.Errorf("%d %s", r.status, r.body)
					}
					return
				}
				wantError(t, r, tc.status, tc.code, tc.field)
				if after := tenantCount(t, st); after != before {
					t.Errorf("a refused request stored a tenant: %d -> %d", before, after)
				}
			})
		}

		// A chunked body has no Content-Length: the limit applies while the
		// decoder reads.
		big := `{"cust_name":"` + strings.Repeat("x", 4096) + `"}`
		req, _ := http.NewRequest("POST", f.srv.URL+api+"/tenants/", io.MultiReader(strings.NewReader(big)))
		req.ContentLength = -1
		req.SetBasicAuth("admin", adminKey)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		wantError(t, response{status: res.StatusCode, body: b}, 413, "body_too_large", "")
	})
}

func TestTenantsRESTPagingAndOrder(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixtureWithoutTenant(t, st)
		var ids []string
		for i := range 5 {
			ids = append(ids, f.createTenantREST(`{"cust_name":"t` + itoa(i) + `"}`)["cust_id"].(string))
		}
		listed := func(r response) []string {
			var out []string
			for _, tn := range data[[]map[string]any](t, r) {
				out = append(out, tn["cust_id"].(string))
			}
			return out
		}
		for name, tc := range map[string]struct {
			query string
			want  []string
		}{
			"neither":          {"", ids},
			"trailing slash":   {"/", ids},
			"limit":            {"?limit=2", ids[:2]},
			"limit and offset": {"?limit=2&offset=3", ids[3:]},
			"offset":           {"?offset=4", ids[4:]},
			"past the end":     {"?offset=10", nil},
		} {
			t.Run(name, func(t *testing.T) {
				r := f.rest("GET", "/tenants"+tc.query, "")
				if got := listed(r); r.status != 200 || !slices.Equal(got, tc.want) {
					t.Errorf("GET /tenants%s = %d %v, want %v", tc.query, r.status, got, tc.want)
				}
			})
		}
		for name, tc := range map[string]struct{ query, field string }{
			"limit not a number": {"?limit=ten", "limit"},
			"zero limit":         {"?limit=0", "limit"},
			"negative offset":    {"?offset=-1", "offset"},
			"offset not number":  {"?limit=1&offset=x", "offset"},
		} {
			t.Run(name, func(t *testing.T) {
				wantError(t, f.rest("GET", "/tenants"+tc.query, ""), 400, "invalid_query", tc.field)
				wantError(t, f.rest("GET", "/tenant_groups"+tc.query, ""), 400, "invalid_query", tc.field)
			})
		}
	})
}

func TestTenantsRESTDelete(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixtureWithoutTenant(t, st)
		id := f.createTenantREST(`{"cust_name":"Gone"}`)["cust_id"].(string)
		keep := f.createTenantREST(`{"cust_name":"Kept"}`)["cust_id"].(string)
		r := f.rest("DELETE", "/tenants/"+id, "")
		if msg := data[string](t, r); r.status != 200 || !strings.Contains(msg, id) {
			t.Errorf("DELETE = %d %s", r.status, r.body)
		}
		if _, err := st.Tenant(context.Background(), id); err == nil {
			t.Error("tenant row survived DELETE")
		}
		wantError(t, f.rest("GET", "/tenants/"+id, ""), 404, "not_found", "")
		wantError(t, f.rest("DELETE", "/tenants/"+id, ""), 404, "not_found", "")
		if tenantCount(t, st) != 1 {
			t.Errorf("DELETE removed other tenants")
		}
		_ = keep
	})
}

func TestTenantsRESTAuth(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		ctx := context.Background()
		own := f.createTenantREST(`{"cust_name":"Own"}`)["cust_id"].(string)
		other := f.createTenantREST(`{"cust_name":"Other"}`)["cust_id"].(string)
		u, err := st.CreateUser(ctx, "owner", "owner-password", store.ScopeTenant, &own)
		if err != nil {
			t.Fatal(err)
		}
		_, key, err := st.CreateAPIKey(ctx, u.ID, "test", "")
		if err != nil {
			t.Fatal(err)
		}
		as := func(method, path, body string) response { return f.do(method, api+path, "owner", key, body, nil) }

		for name, tc := range map[string]struct{ user, key string }{
			"no credentials": {"", ""},
			"wrong key":      {"admin", adminKey + "x"},
			"unknown user":   {"nobody", adminKey},
			"password":       {"admin", "admin-password"},
		} {
			t.Run(name, func(t *testing.T) {
				for _, path := range []string{"/tenants", "/tenants/" + own, "/tenant_groups"} {
					r := f.do("GET", api+path, tc.user, tc.key, "", nil)
					wantError(t, r, 401, "unauthenticated", "")
					if r.header.Get("WWW-Authenticate") == "" {
						t.Errorf("401 without WWW-Authenticate")
					}
				}
				wantError(t, f.do("POST", api+"/tenants/", tc.user, tc.key, `{"cust_name":"x"}`, nil), 401, "unauthenticated", "")
			})
		}

		// A tenant-scoped caller reads its own tenant only, and writes nothing.
		r := as("GET", "/tenants", "")
		if list := data[[]map[string]any](t, r); len(list) != 1 || list[0]["cust_id"] != own || list[0]["user_num"] != 1.0 {
			t.Errorf("tenant caller's list = %s", r.body)
		}
		if r := as("GET", "/tenants/"+own, ""); r.status != 200 {
			t.Errorf("own tenant = %d", r.status)
		}
		wantError(t, as("GET", "/tenants/"+other, ""), 404, "not_found", "")
		wantError(t, as("GET", "/tenant_groups", ""), 403, "forbidden", "")
		before := tenantCount(t, st)
		wantError(t, as("POST", "/tenants/", `{"cust_name":"x"}`), 403, "forbidden", "")
		wantError(t, as("PATCH", "/tenants/"+own, `{"cust_name":"Mine now"}`), 403, "forbidden", "")
		wantError(t, as("DELETE", "/tenants/"+other, ""), 403, "forbidden", "")
		wantError(t, as("POST", "/tenant_groups/", `{"tgrp_name":"g","tenants":["`+own+`"]}`), 403, "forbidden", "")
		if got, _ := st.Tenant(ctx, own); got.Name != "Own" || tenantCount(t, st) != before {
			t.Errorf("forbidden writes changed tenants")
		}
	})
}

func TestTenantsRESTSaaSEdition(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		// On-premises, retention_group is an ordinary field.
		if got := f.createTenantREST(`{"cust_name":"a","retention_group":"gold"}`); got["retention_group"] != "gold" {
			t.Errorf("on-prem retention_group = %v", got["retention_group"])
		}
		// The same store served by a SaaS-edition server.
		cfg := server.DefaultConfig()
		cfg.Edition = server.EditionSaaS
		saas := httptest.NewServer(server.New(cfg, st, &graph.Resolver{Store: st, SaaS: true}, discardLogger()).Handler())
		t.Cleanup(saas.Close)
		f.srv = saas
		before := tenantCount(t, st)
		wantError(t, f.rest("POST", "/tenants/", `{"cust_name":"b","retention_group":"gold"}`), 422, "invalid_field", "retention_group")
		if tenantCount(t, st) != before {
			t.Error("refused SaaS create stored a tenant")
		}
		id := f.createTenantREST(`{"cust_name":"c"}`)["cust_id"].(string)
		wantError(t, f.rest("PATCH", "/tenants/"+id, `{"cust_name":"c","retention_group":"gold"}`), 422, "invalid_field", "retention_group")
	})
}
