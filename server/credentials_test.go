package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tifeeds/tifeeds/server"
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
		withCookie := map[string]string{"Cookie": cookie, "Origin": f.srv.URL} // as the dashboard sends
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

		// Through the API, which announces it: credentials verified a
		// moment ago are cached, and the announcement drops them.
		if r := f.do("DELETE", api+"/tenants/"+f.tenantID, "admin", adminKey, "", nil); r.status/100 != 2 {
			t.Fatalf("delete the tenant: %d %s", r.status, r.body)
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

// closesWithin reads c until the server closes it, failing when it is still
// open after wait. Messages before the close (subscription events) are
// skipped.
func (c *wsClient) closesWithin(wait time.Duration, what string) {
	c.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		_, err := c.read(time.Until(deadline))
		if err == nil {
			continue
		}
		if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
			c.t.Errorf("%s: the socket is still open after %s", what, wait)
		}
		return // closed by the server
	}
}

// userKey gives user a new API key and returns it with its id.
func userKey(t *testing.T, st *store.Store, username string) (int64, string) {
	t.Helper()
	u, err := st.UserByName(context.Background(), username)
	if err != nil {
		t.Fatal(err)
	}
	k, key, err := st.CreateAPIKey(context.Background(), u.ID, "socket", "")
	if err != nil {
		t.Fatal(err)
	}
	return k.ID, key
}

// TestRevocationClosesSockets: revoking the key a socket was opened with,
// logging out the session it was opened with, or deleting the tenant of its
// user closes it within seconds. The re-check period is left at its default
// (30 s), so the close comes from the revocation event.
func TestRevocationClosesSockets(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		const feedEvents = `subscription { feedStatusChanged { id } }`

		t.Run("API key revoked", func(t *testing.T) {
			keyID, key := userKey(t, st, "admin")
			c := f.dialWS(nil)
			c.init(map[string]any{"username": "admin", "apiKey": key})
			c.subscribe("1", feedEvents)
			other := f.dialWS(nil) // another key of the same user stays open
			other.init(map[string]any{"username": "admin", "apiKey": adminKey})
			r := f.graphql("admin", adminKey, `mutation { revokeApiKey(id: "`+itoa(int(keyID))+`") }`)
			if r.status != http.StatusOK || !strings.Contains(string(r.body), `"revokeApiKey":true`) {
				t.Fatalf("revoke: %d %s", r.status, r.body)
			}
			c.closesWithin(5*time.Second, "revoked key")
			other.subscribe("2", `{ me { username } }`)
			if m, err := other.read(5 * time.Second); err != nil || !strings.Contains(string(m.Payload), `"admin"`) {
				t.Errorf("socket of another key after the revocation: %s %s %v", m.Type, m.Payload, err)
			}
		})
		t.Run("session logged out", func(t *testing.T) {
			cookie := f.login("admin", "admin-password")
			c := f.dialWS(http.Header{"Cookie": {cookie}})
			c.init(map[string]any{})
			c.subscribe("1", feedEvents)
			if r := f.do("POST", "/api/logout", "", "", "", map[string]string{"Cookie": cookie, "Origin": f.srv.URL, "Content-Type": "application/json"}); r.status != http.StatusNoContent {
				t.Fatalf("logout: %d %s", r.status, r.body)
			}
			c.closesWithin(5*time.Second, "ended session")
		})
		t.Run("tenant deleted", func(t *testing.T) {
			c := f.dialWS(nil)
			c.init(map[string]any{"username": "analyst", "apiKey": f.tenantKey})
			if r := f.do("DELETE", api+"/tenants/"+f.tenantID, "admin", adminKey, "", nil); r.status != http.StatusOK {
				t.Fatalf("delete tenant: %d %s", r.status, r.body)
			}
			c.closesWithin(5*time.Second, "deleted tenant")
		})
	})
}

// TestNoOperationOnARevokedSocket revokes credentials behind the server's
// back (no event): the next operation on the socket is refused, does not
// run, and the socket closes. Today's defect: such a socket minted a new
// API key after its own was revoked.
func TestNoOperationOnARevokedSocket(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		ctx := context.Background()
		admin, err := st.UserByName(ctx, "admin")
		if err != nil {
			t.Fatal(err)
		}
		type revocable struct {
			open   func() *wsClient // a socket opened with the credential
			revoke func()           // ends the credential in the store only
		}
		for name, tc := range map[string]revocable{
			"API key": func() (c revocable) {
				keyID, key := userKey(t, st, "admin")
				c.open = func() *wsClient {
					ws := f.dialWS(nil)
					ws.init(map[string]any{"username": "admin", "apiKey": key})
					return ws
				}
				c.revoke = func() {
					if err := st.RevokeAPIKey(ctx, admin.ID, keyID); err != nil {
						t.Fatal(err)
					}
				}
				return c
			}(),
			"session": func() (c revocable) {
				cookie := f.login("admin", "admin-password")
				c.open = func() *wsClient {
					ws := f.dialWS(http.Header{"Cookie": {cookie}})
					ws.init(map[string]any{})
					return ws
				}
				c.revoke = func() {
					token := strings.TrimPrefix(cookie, "tifeeds_session=")
					if err := st.DeleteSession(ctx, token); err != nil {
						t.Fatal(err)
					}
				}
				return c
			}(),
		} {
			t.Run(name, func(t *testing.T) {
				c := tc.open()
				tc.revoke()
				before, err := st.APIKeys(ctx, admin.ID)
				if err != nil {
					t.Fatal(err)
				}
				c.subscribe("1", `mutation { createApiKey(name: "minted") { key } }`)
				m, err := c.read(5 * time.Second)
				if err != nil || !strings.Contains(string(m.Payload), "UNAUTHENTICATED") || strings.Contains(string(m.Payload), "tif_") {
					t.Errorf("mutation on a revoked socket: %s %s %v, want UNAUTHENTICATED", m.Type, m.Payload, err)
				}
				c.closesWithin(5*time.Second, "socket refused an operation")
				after, err := st.APIKeys(ctx, admin.ID)
				if err != nil {
					t.Fatal(err)
				}
				if len(after) != len(before) {
					t.Errorf("the mutation ran: %d keys, was %d", len(after), len(before))
				}
			})
		}
	})
}

// TestSocketRecheckCatchesMissedRevocations: with no event at all, a socket
// whose key was revoked closes at the next periodic re-check.
func TestSocketRecheckCatchesMissedRevocations(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st, func(c *server.Config) { c.SocketRecheck = 100 * time.Millisecond })
		admin, err := st.UserByName(context.Background(), "admin")
		if err != nil {
			t.Fatal(err)
		}
		keyID, key := userKey(t, st, "admin")
		c := f.dialWS(nil)
		c.init(map[string]any{"username": "admin", "apiKey": key})
		c.subscribe("1", `subscription { feedStatusChanged { id } }`)
		if err := st.RevokeAPIKey(context.Background(), admin.ID, keyID); err != nil {
			t.Fatal(err)
		}
		c.closesWithin(5*time.Second, "key revoked without an event")
	})
}

// TestRevocationReachesOtherInstances revokes a key through one instance:
// a socket opened with it on another instance sharing the PostgreSQL
// database closes within seconds (its own re-check period is 30 s).
func TestRevocationReachesOtherInstances(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	a, b := newInstance(t, dsn), newInstance(t, dsn)
	ctx := context.Background()
	if _, err := a.store.EnsureAdmin(ctx, "admin", "admin-password", adminKey); err != nil {
		t.Fatal(err)
	}
	feed, err := a.store.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: "probe",
		CollectionURL: "http://127.0.0.1:1/f.tsv", PollingFrequency: 4, RetentionPeriod: 30})
	if err != nil {
		t.Fatal(err)
	}
	id := itoa(int(feed.ID))
	keyID, key := userKey(t, a.store, "admin")
	c := b.dialWS(nil)
	c.init(map[string]any{"username": "admin", "apiKey": key})
	c.subscribe("s", `subscription { feedStatusChanged(feedId: "`+id+`") { id statusMessage enabled description } }`)
	events := streamStatus(t, c)
	// Wait until B hears A (its listener is up): probe with feed changes.
	for try := 1; ; try++ {
		r := a.graphql("admin", adminKey, `mutation { updateFeed(id: "`+id+`", input: {description: "probe `+itoa(try)+`"}) { id } }`)
		if r.status != http.StatusOK || strings.Contains(string(r.body), `"errors"`) {
			t.Fatalf("updateFeed on A: %d %s", r.status, r.body)
		}
		if _, timedOut := events.next(500 * time.Millisecond); !timedOut {
			break
		}
		if try == 20 {
			t.Fatal("B heard none of 20 changes made on A")
		}
	}
	// B verified the key just now and caches it; the revocation drops it.
	if r := b.do("GET", api+"/tenants", "admin", key, "", nil); r.status != http.StatusOK {
		t.Fatalf("REST on B with the key: %d", r.status)
	}
	r := a.graphql("admin", adminKey, `mutation { revokeApiKey(id: "`+itoa(int(keyID))+`") }`)
	if !strings.Contains(string(r.body), `"revokeApiKey":true`) {
		t.Fatalf("revoke on A: %s", r.body)
	}
	select {
	case <-events.err: // the stream ends when B closes the socket
	case <-time.After(10 * time.Second):
		t.Fatal("B's socket is still open 10 s after its key was revoked on A")
	}
	if r := b.do("GET", api+"/tenants", "admin", key, "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("REST on B with the key revoked on A: %d, want 401", r.status)
	}
}
