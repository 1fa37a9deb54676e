package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

const evilOrigin = "https://evil.example"

// adminSession signs admin in as the dashboard does and returns the session cookie.
func (f *fixture) adminSession() *http.Cookie {
	f.t.Helper()
	r := f.do("POST", "/api/login", "", "", `{"username":"admin","password":"admin-password"}`,
		map[string]string{"Origin": f.srv.URL})
	cookies := (&http.Response{Header: r.header}).Cookies()
	if r.status != 200 || len(cookies) != 1 {
		f.t.Fatalf("login: %d %s", r.status, r.body)
	}
	return cookies[0]
}

func (f *fixture) tenants() int {
	f.t.Helper()
	var n int
	if err := f.store.DB.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM tenants").Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// TestCrossSiteWritesRefused: a state-changing request that rides the
// session cookie from another site, or not as JSON, is refused with 403 and
// changes nothing; the dashboard's own requests and API clients with basic
// auth go through.
func TestCrossSiteWritesRefused(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		cookie := f.adminSession()
		session := cookie.Name + "=" + cookie.Value
		tenant := `{"cust_name":"Mallory"}`
		mutation := `{"query":"mutation { createTenant(input: {name: \"Mallory\"}) { id } }"}`
		cases := map[string]struct {
			path, body, user string
			header           map[string]string
			want             int
		}{
			"cookie, cross-site text/plain REST write": {path: "/connect/api/v1/tenants", body: tenant,
				header: map[string]string{"Cookie": session, "Origin": evilOrigin, "Content-Type": "text/plain"}, want: 403},
			"cookie, cross-site JSON REST write": {path: "/connect/api/v1/tenants", body: tenant,
				header: map[string]string{"Cookie": session, "Origin": evilOrigin}, want: 403},
			"cookie, Origin null": {path: "/connect/api/v1/tenants", body: tenant,
				header: map[string]string{"Cookie": session, "Origin": "null"}, want: 403},
			"cookie, Sec-Fetch-Site cross-site without Origin": {path: "/connect/api/v1/tenants", body: tenant,
				header: map[string]string{"Cookie": session, "Sec-Fetch-Site": "cross-site"}, want: 403},
			"cookie, Sec-Fetch-Site same-site without Origin": {path: "/connect/api/v1/tenants", body: tenant,
				header: map[string]string{"Cookie": session, "Sec-Fetch-Site": "same-site"}, want: 403},
			"cookie, same origin but text/plain": {path: "/connect/api/v1/tenants", body: tenant,
				header: map[string]string{"Cookie": session, "Origin": f.srv.URL, "Content-Type": "text/plain"}, want: 403},
			"cookie, neither Origin nor Sec-Fetch-Site": {path: "/connect/api/v1/tenants", body: tenant,
				header: map[string]string{"Cookie": session}, want: 403},
			"cookie, cross-site text/plain GraphQL mutation": {path: "/graphql", body: mutation,
				header: map[string]string{"Cookie": session, "Origin": evilOrigin, "Content-Type": "text/plain"}, want: 403},
			"cookie, same-origin text/plain GraphQL mutation": {path: "/graphql", body: mutation,
				header: map[string]string{"Cookie": session, "Origin": f.srv.URL, "Content-Type": "text/plain"}, want: 403},
			"cookie, cross-site logout": {path: "/api/logout",
				header: map[string]string{"Cookie": session, "Origin": evilOrigin, "Content-Type": "application/json"}, want: 403},
			"cross-site login": {path: "/api/login", body: `{"username":"admin","password":"admin-password"}`,
				header: map[string]string{"Origin": evilOrigin}, want: 403},
			"text/plain login": {path: "/api/login", body: `{"username":"admin","password":"admin-password"}`,
				header: map[string]string{"Origin": f.srv.URL, "Content-Type": "text/plain"}, want: 403},
			"basic auth, cross-site": {path: "/connect/api/v1/tenants", body: tenant, user: "admin",
				header: map[string]string{"Origin": evilOrigin}, want: 403},
		}
		for name, c := range cases {
			t.Run(name, func(t *testing.T) {
				before := f.tenants()
				r := f.do("POST", c.path, c.user, adminKey, c.body, c.header)
				if r.status != c.want {
					t.Fatalf("status %d, want %d: %s", r.status, c.want, r.body)
				}
				if code := errorCode(t, r.body); code != "cross_site" {
					t.Errorf("code %q", code)
				}
				if n := f.tenants(); n != before {
					t.Errorf("%d tenants after a refused request, want %d", n, before)
				}
				if len(r.header.Values("Set-Cookie")) != 0 {
					t.Errorf("a refused request set cookies: %v", r.header.Values("Set-Cookie"))
				}
			})
		}
		// The session survived the refused logout.
		me := `{"query":"{ me { username } }"}`
		same := map[string]string{"Cookie": session, "Origin": f.srv.URL}
		if r := f.do("POST", "/graphql", "", "", me, same); r.status != 200 || !strings.Contains(string(r.body), "admin") {
			t.Fatalf("the session after a cross-site logout: %d %s", r.status, r.body)
		}

		allowed := map[string]struct {
			user   string
			header map[string]string
		}{
			"cookie, same origin, JSON":                   {header: same},
			"cookie, Sec-Fetch-Site same-origin, JSON":    {header: map[string]string{"Cookie": session, "Sec-Fetch-Site": "same-origin"}},
			"basic auth without Origin":                   {user: "admin"},
			"basic auth beside a cookie, without headers": {user: "admin", header: map[string]string{"Cookie": session}},
		}
		for name, c := range allowed {
			t.Run(name, func(t *testing.T) {
				before := f.tenants()
				r := f.do("POST", "/connect/api/v1/tenants", c.user, adminKey, `{"cust_name":"Acme `+name+`"}`, c.header)
				if r.status != http.StatusCreated || f.tenants() != before+1 {
					t.Fatalf("status %d, %d tenants before: %s", r.status, before, r.body)
				}
			})
		}
		// Basic auth with a body of another type is no cross-site request,
		// and no body the REST API takes either.
		if before, r := f.tenants(), f.do("POST", "/connect/api/v1/tenants", "admin", adminKey, `{"cust_name":"Acme text"}`,
			map[string]string{"Content-Type": "text/plain"}); r.status != http.StatusUnsupportedMediaType || f.tenants() != before {
			t.Errorf("basic auth, text/plain: status %d, %d tenants before: %s", r.status, before, r.body)
		}
		r := f.do("POST", "/graphql", "", "", mutation, same)
		if r.status != 200 || strings.Contains(string(r.body), `"errors"`) {
			t.Errorf("same-origin GraphQL mutation with the cookie: %d %s", r.status, r.body)
		}
		if r := f.do("POST", "/api/logout", "", "", "", map[string]string{"Cookie": session, "Origin": f.srv.URL,
			"Content-Type": "application/json"}); r.status != http.StatusNoContent {
			t.Errorf("same-origin logout: %d %s", r.status, r.body)
		}
	})
}

// TestAllowedOrigins: behind a proxy that rewrites Host, the dashboard's
// public origin is configured; other origins stay refused.
func TestAllowedOrigins(t *testing.T) {
	st := storetest.NewSQLite(t)
	f := newFixture(t, st)
	cfg := server.DefaultConfig()
	cfg.AllowedOrigins = []string{"https://tifeeds.example.com"}
	srv := httptest.NewServer(server.New(cfg, st, &graph.Resolver{Store: st}, discardLogger()).Handler())
	defer srv.Close()
	f.srv = srv
	login := `{"username":"admin","password":"admin-password"}`
	for origin, want := range map[string]int{
		"https://tifeeds.example.com":     200,
		"https://TIFEEDS.example.com":     200,
		"https://tifeeds.example.com:444": 403,
		"https://other.example.com":       403,
	} {
		if r := f.do("POST", "/api/login", "", "", login, map[string]string{"Origin": origin}); r.status != want {
			t.Errorf("login from %s: %d, want %d", origin, r.status, want)
		}
		// The dashboard's websocket follows the same rule.
		d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
		c, res, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/graphql", http.Header{"Origin": {origin}})
		if want == 200 && err != nil || want == 403 && (res == nil || res.StatusCode != http.StatusForbidden) {
			t.Errorf("websocket from %s: %v %v", origin, res, err)
		}
		if c != nil {
			c.Close()
		}
	}
}

// TestSecurityHeaders: the dashboard and the API answers carry the CSP,
// nosniff, a referrer policy and refuse framing.
func TestSecurityHeaders(t *testing.T) {
	st := storetest.NewSQLite(t)
	f := newFixture(t, st)
	for name, r := range map[string]response{
		"dashboard":      f.do("GET", "/", "", "", "", nil),
		"dashboard page": f.do("GET", "/feeds/1", "", "", "", nil),
		"health":         f.do("GET", "/healthz", "", "", "", nil),
		"graphql 401":    f.graphql("", "", "{ me { username } }"),
		"graphql":        f.graphql("admin", adminKey, "{ me { username } }"),
		"rest":           f.do("GET", "/connect/api/v1/tenants", "admin", adminKey, "", nil),
		"refused":        f.do("POST", "/api/login", "", "", "{}", map[string]string{"Origin": evilOrigin}),
	} {
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") ||
			strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: Content-Security-Policy %q", name, csp)
		}
		if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", name, got)
		}
		if got := r.header.Get("Referrer-Policy"); got == "" {
			t.Errorf("%s: no Referrer-Policy", name)
		}
		if got := r.header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s: X-Frame-Options %q", name, got)
		}
	}
}

// TestCookieSecure: --cookie-secure marks the session cookie Secure on a
// plain-HTTP listener (behind a TLS-terminating proxy); without it, plain
// HTTP keeps the cookie usable.
func TestCookieSecure(t *testing.T) {
	st := storetest.NewSQLite(t)
	if _, err := st.EnsureAdmin(context.Background(), "admin", "admin-password", adminKey); err != nil {
		t.Fatal(err)
	}
	for _, secure := range []bool{false, true} {
		cfg := server.DefaultConfig()
		cfg.CookieSecure = secure
		srv := httptest.NewServer(server.New(cfg, st, &graph.Resolver{Store: st}, discardLogger()).Handler())
		f := &fixture{t: t, store: st, srv: srv}
		if c := f.adminSession(); c.Secure != secure {
			t.Errorf("CookieSecure=%v: cookie Secure=%v", secure, c.Secure)
		}
		r := f.do("POST", "/api/logout", "", "", "", map[string]string{"Origin": srv.URL})
		if c := (&http.Response{Header: r.header}).Cookies(); len(c) != 1 || c[0].Secure != secure {
			t.Errorf("CookieSecure=%v: logout cookie %+v", secure, c)
		}
		srv.Close()
	}
}

// TestDatabaseDown: while the database does not answer, authenticated
// endpoints answer 503 (not 401, which clients read as wrong credentials),
// and /readyz says so without the driver's words.
func TestDatabaseDown(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		session := f.adminSession()
		cookie := map[string]string{"Cookie": session.Name + "=" + session.Value, "Origin": f.srv.URL}
		st.Close()
		me := `{"query":"{ me { username } }"}`
		for name, r := range map[string]response{
			"graphql, basic auth": f.do("POST", "/graphql", "admin", adminKey, me, nil),
			"graphql, cookie":     f.do("POST", "/graphql", "", "", me, cookie),
			"rest":                f.do("GET", "/connect/api/v1/tenants", "admin", adminKey, "", nil),
			"export":              f.do("GET", "/api/export/iocs.csv", "admin", adminKey, "", nil),
			"readyz":              f.do("GET", "/readyz", "", "", "", nil),
		} {
			if r.status != http.StatusServiceUnavailable {
				t.Errorf("%s: %d, want 503: %s", name, r.status, r.body)
				continue
			}
			if code := errorCode(t, r.body); code != "database_unavailable" {
				t.Errorf("%s: code %q", name, code)
			}
			for _, leak := range []string{"sql:", "closed", "sqlite", "pgx", "tifeeds.db", "127.0.0.1"} {
				if strings.Contains(strings.ToLower(string(r.body)), leak) {
					t.Errorf("%s: the answer shows the driver's error (%q): %s", name, leak, r.body)
				}
			}
			if r.header.Get("WWW-Authenticate") != "" {
				t.Errorf("%s: asks for credentials while the database is down", name)
			}
		}
	})
}

// TestCookieRequestsNeedAServedHost: a request riding the session cookie
// must name, in Host, a host this server serves: DNS rebinding points a
// name of the attacker's at the server, and the browser then sends the
// cookie the server set with that name as Host (and Origin). IP addresses,
// localhost, the hosts of --allowed-origins and --allowed-hosts are
// served; API clients with basic auth are not concerned.
func TestCookieRequestsNeedAServedHost(t *testing.T) {
	st := storetest.NewSQLite(t)
	f := newFixture(t, st, func(c *server.Config) {
		c.AllowedOrigins = []string{"https://tifeeds.example.com"}
		c.AllowedHosts = []string{"intranet.example.org", "Ops.Example.Org."}
		c.PublicURL = "https://ti.example.net:8443/tifeeds"
	})
	cookie := f.adminSession()
	_, port, _ := strings.Cut(strings.TrimPrefix(f.srv.URL, "http://"), ":")
	withCookie := func(host string, extra map[string]string) map[string]string {
		h := map[string]string{"Cookie": cookie.Name + "=" + cookie.Value, "Host": host}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	query := `{"query":"{ me { username } }"}`
	for host, served := range map[string]bool{
		"127.0.0.1:" + port:            true,
		"localhost:" + port:            true,
		"[::1]:" + port:                true,
		"LOCALHOST":                    true,
		"tifeeds.example.com":          true,
		"intranet.example.org:8443":    true,
		"ops.example.org":              true,
		"ti.example.net":               true,
		"rebind.evil.example:" + port:  false,
		"evil.example":                 false,
		"127.0.0.1.evil.example":       false,
		"tifeeds.example.com.evil.org": false,
	} {
		// The page the browser shows is on that host: it is the origin too.
		own := map[string]string{"Origin": "http://" + host}
		checks := []response{
			f.do("GET", "/api/export/feeds.csv", "", "", "", withCookie(host, nil)),
			f.do("POST", "/graphql", "", "", query, withCookie(host, own)),
			f.do("GET", "/connect/api/v1/tenants", "", "", "", withCookie(host, nil)),
		}
		for i, r := range checks {
			switch {
			case served && r.status != http.StatusOK:
				t.Errorf("Host %s, request %d: %d %s, want 200", host, i, r.status, r.body)
			case !served && (r.status != http.StatusForbidden || errorCode(t, r.body) != "unknown_host"):
				t.Errorf("Host %s, request %d: %d %s, want 403 unknown_host", host, i, r.status, r.body)
			}
		}
		if r := f.do("GET", "/api/export/feeds.csv", "admin", adminKey, "", map[string]string{"Host": host}); r.status != 200 {
			t.Errorf("Host %s with basic auth: %d %s", host, r.status, r.body)
		}
	}
	// The dashboard's websocket rides the cookie too.
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
	url := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/graphql"
	c, res, err := d.Dial(url, http.Header{"Cookie": {cookie.Name + "=" + cookie.Value},
		"Host": {"rebind.evil.example:" + port}, "Origin": {"http://rebind.evil.example:" + port}})
	if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("websocket with the cookie from a rebound name: %v %v", res, err)
	}
	if c != nil {
		c.Close()
	}
}
