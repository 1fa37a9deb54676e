package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// login signs in with a password and returns the session cookie as a
// Cookie header value.
func (f *fixture) login(user, password string) string {
	f.t.Helper()
	r := f.do("POST", "/api/login", "", "", `{"username":"`+user+`","password":"`+password+`"}`, nil)
	cookies := (&http.Response{Header: r.header}).Cookies()
	if r.status != http.StatusOK || len(cookies) != 1 {
		f.t.Fatalf("login: %d %s", r.status, r.body)
	}
	return cookies[0].Name + "=" + cookies[0].Value
}

// wsRefused reports whether connection_init with payload (after an upgrade
// with header) is closed with 4403 Forbidden.
func (f *fixture) wsRefused(header http.Header, payload map[string]any) bool {
	f.t.Helper()
	c := f.dialWS(header)
	c.send(map[string]any{"type": "connection_init", "payload": payload})
	_, err := c.read(5 * time.Second)
	var ce *websocket.CloseError
	return err != nil && asCloseError(err, &ce) && ce.Code == 4403
}

// TestDeletedTenantEndsItsUsersAccess: once a tenant is deleted, its users'
// API keys, sessions and passwords stop working on REST, GraphQL and the
// websocket.
func TestDeletedTenantEndsItsUsersAccess(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		cookie := f.login("analyst", "analyst-password")
		withCookie := map[string]string{"Cookie": cookie}
		wsKey := map[string]any{"username": "analyst", "apiKey": f.tenantKey}
		checks := map[string]func() int{
			"REST with the key": func() int {
				return f.do("GET", api+"/tenants", "analyst", f.tenantKey, "", nil).status
			},
			"REST with the session": func() int {
				return f.do("GET", api+"/tenants", "", "", "", withCookie).status
			},
			"GraphQL with the key": func() int { return f.graphql("analyst", f.tenantKey, `{ me { username } }`).status },
			"GraphQL with the session": func() int {
				return f.do("POST", "/graphql", "", "", `{"query":"{ me { username } }"}`, withCookie).status
			},
			"login": func() int {
				return f.do("POST", "/api/login", "", "", `{"username":"analyst","password":"analyst-password"}`, nil).status
			},
		}
		for name, check := range checks {
			if got := check(); got != http.StatusOK {
				t.Fatalf("%s with the tenant: %d", name, got)
			}
		}
		if f.wsRefused(nil, wsKey) || f.wsRefused(http.Header{"Cookie": {cookie}}, map[string]any{}) {
			t.Fatal("websocket refused with the tenant")
		}

		if _, err := st.DeleteTenant(context.Background(), f.tenantID); err != nil {
			t.Fatal(err)
		}
		for name, check := range checks {
			if got := check(); got != http.StatusUnauthorized {
				t.Errorf("%s after the tenant was deleted: %d, want 401", name, got)
			}
		}
		if !f.wsRefused(nil, wsKey) {
			t.Error("websocket init with the key after the tenant was deleted: accepted")
		}
		if !f.wsRefused(http.Header{"Cookie": {cookie}}, map[string]any{}) {
			t.Error("websocket with the session after the tenant was deleted: accepted")
		}
	})
}
