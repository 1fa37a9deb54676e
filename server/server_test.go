package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

const adminKey = "tif_test-admin-key-0123456789"

// fixture is a running server on a real store with an admin and (from
// newFixture) a tenant user in a tenant of its own.
type fixture struct {
	t         *testing.T
	store     *store.Store
	srv       *httptest.Server
	tenantKey string
	tenantID  string // the tenant of the "analyst" user
}

func newFixture(t *testing.T, st *store.Store, opts ...func(*server.Config)) *fixture {
	t.Helper()
	f := newFixtureWithoutTenant(t, st, opts...)
	ctx := context.Background()
	tenant, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some("Analyst's tenant")}, store.TenantRules{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.CreateUser(ctx, "analyst", "analyst-password", store.ScopeTenant, &tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := st.CreateAPIKey(ctx, u.ID, "test", "")
	if err != nil {
		t.Fatal(err)
	}
	f.tenantKey, f.tenantID = key, tenant.ID
	return f
}

// newFixtureWithoutTenant is a running server with only the admin, for
// tests that count tenants.
func newFixtureWithoutTenant(t *testing.T, st *store.Store, opts ...func(*server.Config)) *fixture {
	t.Helper()
	if _, err := st.EnsureAdmin(context.Background(), "admin", "admin-password", adminKey); err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.BodyLimit = 1 << 10
	for _, o := range opts {
		o(&cfg)
	}
	s := server.New(cfg, st, &graph.Resolver{Store: st, Events: events.NewBus()}, discardLogger())
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &fixture{t: t, store: st, srv: srv}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixture) do(method, path, user, key, body string, header map[string]string) response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if h, ok := header["Host"]; ok {
		req.Host = h // the client sends req.Host, never a Host header
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func (f *fixture) graphql(user, key, query string) response {
	f.t.Helper()
	b, _ := json.Marshal(map[string]string{"query": query})
	return f.do("POST", "/graphql", user, key, string(b), nil)
}

func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("body is not a JSON error: %s", body)
	}
	if e.Error.Message == "" {
		t.Errorf("JSON error without a message: %s", body)
	}
	return e.Error.Code
}

func TestHealthAndReadiness(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		if r := f.do("GET", "/healthz", "", "", "", nil); r.status != 200 {
			t.Errorf("healthz = %d", r.status)
		}
		r := f.do("GET", "/readyz", "", "", "", nil)
		if r.status != 200 || !strings.Contains(string(r.body), string(st.Dialect)) {
			t.Errorf("readyz = %d %s", r.status, r.body)
		}
		st.Close()
		if r := f.do("GET", "/readyz", "", "", "", nil); r.status != http.StatusServiceUnavailable {
			t.Errorf("readyz with the database closed = %d, want 503", r.status)
		}
	})
}

func TestGraphQLAuthentication(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		for name, tc := range map[string]struct {
			user, key  string
			wantStatus int
		}{
			"admin key":       {"admin", adminKey, 200},
			"no credentials":  {"", "", 401},
			"wrong key":       {"admin", adminKey + "x", 401},
			"unknown user":    {"nobody", adminKey, 401},
			"password as key": {"admin", "admin-password", 401},
		} {
			t.Run(name, func(t *testing.T) {
				r := f.graphql(tc.user, tc.key, `{ me { username scope } }`)
				if r.status != tc.wantStatus {
					t.Fatalf("status = %d, want %d: %s", r.status, tc.wantStatus, r.body)
				}
				if tc.wantStatus == 401 {
					if code := errorCode(t, r.body); code != "unauthenticated" {
						t.Errorf("code = %q", code)
					}
					return
				}
				if want := `{"data":{"me":{"username":"admin","scope":"ROOT"}}}`; string(r.body) != want {
					t.Errorf("body = %s, want %s", r.body, want)
				}
			})
		}
	})
}

func TestRevokedKeyIsRefused(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		r := f.graphql("admin", adminKey, `mutation { createApiKey(name: "ci") { key apiKey { id prefix } } }`)
		var created struct {
			Data struct {
				CreateAPIKey struct {
					Key    string
					APIKey struct{ ID, Prefix string } `json:"apiKey"`
				} `json:"createApiKey"`
			}
		}
		if err := json.Unmarshal(r.body, &created); err != nil || created.Data.CreateAPIKey.Key == "" {
			t.Fatalf("createApiKey: %s", r.body)
		}
		key := created.Data.CreateAPIKey.Key
		if !strings.HasPrefix(key, created.Data.CreateAPIKey.APIKey.Prefix) {
			t.Errorf("prefix %q is not the key's start", created.Data.CreateAPIKey.APIKey.Prefix)
		}
		if r := f.graphql("admin", key, `{ me { username } }`); r.status != 200 {
			t.Fatalf("new key refused: %d %s", r.status, r.body)
		}
		r = f.graphql("admin", key, `mutation { revokeApiKey(id: "`+created.Data.CreateAPIKey.APIKey.ID+`") }`)
		if !strings.Contains(string(r.body), `"revokeApiKey":true`) {
			t.Fatalf("revoke: %s", r.body)
		}
		if r := f.graphql("admin", key, `{ me { username } }`); r.status != 401 {
			t.Errorf("revoked key: status %d, want 401", r.status)
		}
		if r := f.graphql("admin", adminKey, `{ me { username } }`); r.status != 200 {
			t.Errorf("other key stopped working: %d", r.status)
		}
	})
}

func TestScopeForbidden(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		// GraphQL: a tenant-scoped caller may not issue keys for others.
		r := f.graphql("analyst", f.tenantKey, `mutation { createApiKey(name: "x", userId: "1") { key } }`)
		if r.status != 200 || !strings.Contains(string(r.body), `"code":"FORBIDDEN"`) {
			t.Errorf("createApiKey for another user by tenant: %d %s", r.status, r.body)
		}
		r = f.graphql("analyst", f.tenantKey, `{ feeds { totalCount } }`)
		if !strings.Contains(string(r.body), `"code":"FORBIDDEN"`) {
			t.Errorf("feeds by tenant: %s", r.body)
		}
		// REST: tenant-scoped callers may read but not write.
		r = f.do("POST", "/connect/api/v1/tenants/", "analyst", f.tenantKey, `{"cust_name":"x"}`, nil)
		if r.status != http.StatusForbidden || errorCode(t, r.body) != "forbidden" {
			t.Errorf("REST write by tenant: %d %s", r.status, r.body)
		}
		r = f.do("GET", "/connect/api/v1/tenants", "", "", "", nil)
		if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("REST without credentials: %d %v", r.status, r.header)
		}
	})
}

func TestBodyLimit(t *testing.T) {
	st := storetest.NewSQLite(t)
	f := newFixture(t, st) // limit 1 KiB
	big := `{"query":"{ me { username } }","variables":{"pad":"` + strings.Repeat("x", 2048) + `"}}`
	r := f.do("POST", "/graphql", "admin", adminKey, big, nil)
	if r.status != http.StatusRequestEntityTooLarge || errorCode(t, r.body) != "body_too_large" {
		t.Errorf("declared oversize body: %d %s", r.status, r.body)
	}
	// A chunked body has no Content-Length: the limit applies while reading.
	req, _ := http.NewRequest("POST", f.srv.URL+"/graphql", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.SetBasicAuth("admin", adminKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked oversize body: %d", res.StatusCode)
	}
	if r := f.do("POST", "/graphql", "admin", adminKey, `{"query":"{ me { username } }"}`, nil); r.status != 200 {
		t.Errorf("small body: %d", r.status)
	}
}

func TestLoginSessionCookie(t *testing.T) {
	st := storetest.NewSQLite(t)
	f := newFixture(t, st)
	r := f.do("POST", "/api/login", "", "", `{"username":"admin","password":"wrong-password"}`, nil)
	if r.status != 401 {
		t.Errorf("wrong password: %d", r.status)
	}
	r = f.do("POST", "/api/login", "", "", `{"username":"admin","password":"admin-password"}`, nil)
	if r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	cookie := (&http.Response{Header: r.header}).Cookies()
	if len(cookie) != 1 || !cookie[0].HttpOnly || cookie[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie = %+v", cookie)
	}
	// As the dashboard sends them: same origin, JSON.
	h := map[string]string{"Cookie": cookie[0].Name + "=" + cookie[0].Value, "Origin": f.srv.URL,
		"Content-Type": "application/json"}
	body := `{"query":"{ me { username } }"}`
	if r := f.do("POST", "/graphql", "", "", body, h); r.status != 200 || !strings.Contains(string(r.body), "admin") {
		t.Errorf("graphql with cookie: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/api/logout", "", "", "", h); r.status != 204 {
		t.Errorf("logout: %d", r.status)
	}
	if r := f.do("POST", "/graphql", "", "", body, h); r.status != 401 {
		t.Errorf("graphql after logout: %d", r.status)
	}
}

func TestGracefulShutdownFinishesRequestsInFlight(t *testing.T) {
	st := storetest.NewSQLite(t)
	cfg := server.DefaultConfig()
	cfg.ShutdownTimeout = 5 * time.Second
	s := server.New(cfg, st, &graph.Resolver{Store: st}, discardLogger())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()

	// A slow client: it sends the headers of a POST, then its body only
	// after shutdown began. The server must still answer it.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"username":"x","password":"yyyyyyyy"}`
	io.WriteString(conn, "POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+
		itoa(len(body))+"\r\n\r\n")
	time.Sleep(100 * time.Millisecond)
	cancel()
	time.Sleep(100 * time.Millisecond)
	io.WriteString(conn, body)
	reply, _ := io.ReadAll(conn)
	if !strings.HasPrefix(string(reply), "HTTP/1.1 401") {
		t.Errorf("request in flight during shutdown got %q", firstLineOf(string(reply)))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("server still accepts connections after shutdown")
	}
}
