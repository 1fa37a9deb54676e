package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// boundedServer is a fixture whose *server.Server the test keeps.
func boundedServer(t *testing.T, st *store.Store, opts ...func(*server.Config)) (*fixture, *server.Server) {
	t.Helper()
	return rebind(t, newFixture(t, st), opts...)
}

// rebind serves the fixture's store with another configuration.
func rebind(t *testing.T, f *fixture, opts ...func(*server.Config)) (*fixture, *server.Server) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.BodyLimit = 1 << 10
	for _, o := range opts {
		o(&cfg)
	}
	s := server.New(cfg, f.store, &graph.Resolver{Store: f.store}, discardLogger())
	g := *f
	g.srv = httptest.NewServer(s.Handler())
	t.Cleanup(g.srv.Close)
	return &g, s
}

// TestRequestWorkIsCapped: a request whose statement cannot finish is
// stopped at the per-request cap with a clear error, instead of holding a
// connection: on SQLite every connection is taken (as long queries would),
// on PostgreSQL the table is locked so the statement itself waits.
func TestRequestWorkIsCapped(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f, _ := boundedServer(t, st, func(c *server.Config) { c.RequestTimeout = 300 * time.Millisecond })
		if st.Dialect == store.Postgres {
			ctx := context.Background()
			conn, err := st.DB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Only iocs here: authentication reads tenants (a tenant user's
			// tenant must exist), and the point is the resolver's statement.
			if _, err := conn.ExecContext(ctx, "BEGIN; LOCK TABLE iocs IN ACCESS EXCLUSIVE MODE"); err != nil {
				t.Fatal(err)
			}
			r := f.graphql("admin", adminKey, `{ iocs(first: 1) { totalCount } }`)
			if !strings.Contains(string(r.body), `"code":"TIMEOUT"`) {
				t.Errorf("GraphQL on a locked table: %d %.300s, want TIMEOUT", r.status, r.body)
			}
			if _, err := conn.ExecContext(ctx, "ROLLBACK; BEGIN; LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE"); err != nil {
				t.Fatal(err)
			}
			defer conn.ExecContext(ctx, "ROLLBACK")
		} else {
			defer storetest.HoldConnections(t, st)()
		}
		r := f.do("GET", "/connect/api/v1/tenants", "admin", adminKey, "", nil)
		if r.status != http.StatusServiceUnavailable || errorCode(t, r.body) != "timeout" {
			t.Errorf("REST while the database is held: %d %s, want 503 timeout", r.status, r.body)
		}
	})
}

// TestSQLiteStatementIsInterrupted: the context's end reaches a running
// SQLite statement (mattn/go-sqlite3 calls sqlite3_interrupt), which is
// what makes the per-request cap bound work there.
func TestSQLiteStatementIsInterrupted(t *testing.T) {
	st := storetest.NewSQLite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var n int64
	err := st.DB.QueryRowContext(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000000) SELECT count(*) FROM c`).Scan(&n)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("endless statement: %v (n = %d), want it interrupted at the deadline", err, n)
	}
}

// TestSlowClientsAreCutOff: hundreds of connections trickling a login body
// or sending nothing are cut off at the read deadlines, while others are
// answered meanwhile.
func TestSlowClientsAreCutOff(t *testing.T) {
	st := storetest.NewSQLite(t)
	newFixture(t, st) // its users
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.ReadHeaderTimeout = 300 * time.Millisecond
	cfg.ReadTimeout = 600 * time.Millisecond
	cfg.IdleTimeout = 600 * time.Millisecond
	s := server.New(cfg, st, &graph.Resolver{Store: st}, discardLogger())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() { stop(); <-done })
	addr := ln.Addr().String()

	const trickling, idle = 150, 150
	var wg sync.WaitGroup
	cut := make(chan error, trickling+idle)
	watch := func(c net.Conn) {
		defer wg.Done()
		defer c.Close()
		// A generous bound, only so that a broken server fails the test
		// instead of hanging it.
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err := io.Copy(io.Discard, c)
		cut <- err
	}
	for i := range trickling + idle {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		wg.Add(1)
		if i < trickling {
			fmt.Fprintf(c, "POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
			go func() {
				for c.SetWriteDeadline(time.Now().Add(time.Second)) == nil {
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
		}
		go watch(c)
	}
	// Others are answered while the slow ones hold their connections.
	client := &http.Client{Timeout: 10 * time.Second}
	for _, path := range []string{"/healthz", "/connect/api/v1/tenants"} {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.SetBasicAuth("admin", adminKey)
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s while slow clients hold %d connections: %v", path, trickling+idle, err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("%s: %d", path, res.StatusCode)
		}
	}
	wg.Wait()
	close(cut)
	for err := range cut {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("a slow client was never cut off: %v", err)
		}
	}
}

// loginAs posts a login, from the address a trusted proxy names.
func loginAs(t *testing.T, f *fixture, user, password, from string) response {
	t.Helper()
	h := map[string]string{}
	if from != "" {
		h["X-Forwarded-For"] = "203.0.113.7, " + from // the first hop is the client's claim, not believed
	}
	return f.do("POST", "/api/login", "", "", `{"username":"`+user+`","password":"`+password+`"}`, h)
}

// TestLoginThrottle: failed logins lock out a user name from the address
// that failed (not from everywhere, or anyone could keep admin out), any
// name from an address that failed too often, and a name failed from too
// many addresses (guessing spread over many clients).
func TestLoginThrottle(t *testing.T) {
	limits := func(trusted bool) func(*server.Config) {
		return func(c *server.Config) {
			c.Login.MaxFailuresPerUserAddr, c.Login.MaxFailuresPerAddr, c.Login.MaxFailuresPerUser = 3, 5, 8
			if trusted {
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			}
		}
	}
	want429 := func(t *testing.T, r response) {
		t.Helper()
		if r.status != http.StatusTooManyRequests {
			t.Fatalf("status %d %s, want 429", r.status, r.body)
		}
		if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
			t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
		}
	}
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f, _ := boundedServer(t, st, limits(true))
		t.Run("per user name and address", func(t *testing.T) {
			for i := range 3 {
				if r := loginAs(t, f, "admin", "wrong", "10.0.0.1"); r.status != 401 {
					t.Fatalf("bad login %d: %d", i, r.status)
				}
			}
			want429(t, loginAs(t, f, "admin", "wrong", "10.0.0.1"))
			want429(t, loginAs(t, f, "admin", "admin-password", "10.0.0.1")) // locked, even with the password
			if r := loginAs(t, f, "admin", "admin-password", "10.0.0.2"); r.status != 200 {
				t.Errorf("the same name from another address: %d %s", r.status, r.body)
			}
			if r := loginAs(t, f, "analyst", "analyst-password", "10.0.0.1"); r.status != 200 {
				t.Errorf("another name from the same address: %d %s", r.status, r.body)
			}
		})
		t.Run("per user name, from many addresses", func(t *testing.T) {
			for i := range 8 {
				if r := loginAs(t, f, "analyst", "wrong", fmt.Sprint("10.2.0.", i/2)); r.status != 401 {
					t.Fatalf("bad login %d: %d", i, r.status)
				}
			}
			want429(t, loginAs(t, f, "analyst", "analyst-password", "10.2.0.99"))
		})
		t.Run("per address, for any name", func(t *testing.T) {
			for i := range 5 {
				if r := loginAs(t, f, fmt.Sprint("user", i), "wrong", "10.9.9.9"); r.status != 401 {
					t.Fatalf("bad login %d: %d", i, r.status)
				}
			}
			want429(t, loginAs(t, f, "admin", "admin-password", "10.9.9.9"))
			if r := loginAs(t, f, "admin", "admin-password", "10.9.9.8"); r.status != 200 {
				t.Errorf("another address: %d %s", r.status, r.body)
			}
		})
		t.Run("X-Forwarded-For from an untrusted peer is ignored", func(t *testing.T) {
			f, _ := rebind(t, f, limits(false))
			for i := range 5 {
				loginAs(t, f, fmt.Sprint("spoof", i), "wrong", fmt.Sprint("10.1.1.", i))
			}
			want429(t, loginAs(t, f, "admin", "admin-password", "10.1.1.99"))
		})
	})
}

// passwordChecks reads the password checks counted in /metrics.
func passwordChecks(t *testing.T, f *fixture) int {
	t.Helper()
	r := f.do("GET", "/metrics", "", "", "", nil)
	for _, line := range strings.Split(string(r.body), "\n") {
		if v, ok := strings.CutPrefix(line, "tifeeds_password_checks_total "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%q", line)
			}
			return n
		}
	}
	t.Fatalf("no tifeeds_password_checks_total in /metrics: %d %.300s", r.status, r.body)
	return 0
}

// TestLoginThrottleUnderABurst: concurrent guesses for one name cannot
// slip past the throttle between its check and its count: each attempt is
// reserved before its password check, so a burst gets no more checks than
// the limit.
func TestLoginThrottleUnderABurst(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		// A queue long enough that no guess is refused as busy.
		f, _ := boundedServer(t, st, func(c *server.Config) { c.Login.HashQueue = 64 })
		before := passwordChecks(t, f)
		const burst = 40
		statuses := make(chan int, burst)
		var wg sync.WaitGroup
		for range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses <- loginAs(t, f, "admin", "wrong", "").status
			}()
		}
		wg.Wait()
		close(statuses)
		counts := map[int]int{}
		for s := range statuses {
			counts[s]++
		}
		limit := server.DefaultLoginLimits().MaxFailuresPerUserAddr
		if checks := passwordChecks(t, f) - before; checks > limit || counts[401] > limit {
			t.Errorf("%d password checks (answers %v) in a burst of %d guesses, want at most %d", checks, counts, burst, limit)
		}
		if counts[401]+counts[429] != burst {
			t.Errorf("answers %v, want only 401 and 429", counts)
		}
	})
}

// TestSlowLoginBodiesHoldNoSlot: clients trickling login bodies, more of
// them than there are login slots, do not keep a real sign-in out: a login
// holds a slot only once its body is read.
func TestSlowLoginBodiesHoldNoSlot(t *testing.T) {
	st := storetest.NewSQLite(t)
	newFixture(t, st) // its users
	cfg := server.DefaultConfig()
	s := server.New(cfg, st, &graph.Resolver{Store: st}, discardLogger())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	addr := ln.Addr().String()

	slow := cfg.MaxLogins + 6
	quit := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(quit); wg.Wait(); stop(); <-done })
	for i := range slow {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		fmt.Fprintf(c, "POST /api/login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for {
				select {
				case <-quit:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
	}
	// Every slow request is being served by now (their headers are whole).
	time.Sleep(500 * time.Millisecond)
	res, err := (&http.Client{Timeout: 10 * time.Second}).Post("http://"+addr+"/api/login", "application/json",
		strings.NewReader(`{"username":"admin","password":"admin-password"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("sign-in while %d clients trickle login bodies: %d %s", slow, res.StatusCode, body)
	}
}

// TestBcryptNeverBlocksAPIKeys: with every bcrypt slot taken (as by a
// flood of logins), API-key requests are still answered, since they never
// wait for one, and more logins are refused at once instead of queueing.
func TestBcryptNeverBlocksAPIKeys(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f, s := boundedServer(t, st, func(c *server.Config) { c.Login.Hashing, c.Login.HashQueue = 1, 0 })
		release := s.HoldLoginHashing()
		r := f.graphql("analyst", f.tenantKey, `{ me { username } }`)
		if r.status != 200 || !strings.Contains(string(r.body), `"analyst"`) {
			t.Errorf("API key with bcrypt saturated: %d %s", r.status, r.body)
		}
		if r := f.do("GET", "/connect/api/v1/tenants", "admin", adminKey, "", nil); r.status != 200 {
			t.Errorf("REST with bcrypt saturated: %d %s", r.status, r.body)
		}
		r = loginAs(t, f, "analyst", "analyst-password", "")
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
			t.Errorf("login with bcrypt saturated: %d %s, want 503 with Retry-After", r.status, r.body)
		}
		release()
		if r := loginAs(t, f, "analyst", "analyst-password", ""); r.status != 200 {
			t.Errorf("login after: %d %s", r.status, r.body)
		}
	})
}

// TestWebsocketOutlivesRequestBounds: a real websocket on /graphql keeps
// working long after the request timeout and the per-write deadline, which
// every other request is held to (TestUpgradeHeadersExemptNothing).
func TestWebsocketOutlivesRequestBounds(t *testing.T) {
	st := storetest.NewSQLite(t)
	f := newFixture(t, st, func(c *server.Config) {
		c.RequestTimeout, c.WriteIdleTimeout = 100*time.Millisecond, 100*time.Millisecond
	})
	c := f.dialWS(nil)
	c.init(map[string]any{"username": "admin", "apiKey": adminKey})
	time.Sleep(time.Second)
	c.subscribe("1", `subscription { feedStatusChanged { id } }`)
	c.send(map[string]string{"type": "ping"})
	if err := c.conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for {
		var m wsMessage
		if err := c.conn.ReadJSON(&m); err != nil {
			t.Fatalf("the websocket, ten request timeouts after it opened: %v", err)
		}
		if m.Type == "pong" {
			return
		}
		if m.Type == "error" {
			t.Fatalf("subscribe after ten request timeouts: %s", m.Payload)
		}
	}
}

// TestRequestsAnswerWhileAWriteIsHeld: a write transaction in progress (a
// batch, a sweep, a key indexer's chunk waiting for another process) holds
// SQLite's one writing connection; authenticated requests, whose
// credentials are checked in the store on first use, and the readiness
// probe read beside it and answer within the request timeout.
func TestRequestsAnswerWhileAWriteIsHeld(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f, _ := boundedServer(t, st, func(c *server.Config) { c.RequestTimeout = 5 * time.Second })
		defer storetest.HoldWrite(t, st, "UPDATE feeds SET enabled = enabled")()
		// Neither key has been used on this server: both are checked in the
		// store.
		if r := f.do("GET", "/connect/api/v1/tenants", "admin", adminKey, "", nil); r.status != http.StatusOK {
			t.Errorf("REST as the admin while a write is held: %d %s", r.status, r.body)
		}
		r := f.graphql("analyst", f.tenantKey, `{ me { username } iocs(first: 1) { totalCount } }`)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"analyst"`) || strings.Contains(string(r.body), `"errors"`) {
			t.Errorf("GraphQL as a tenant user while a write is held: %d %.300s", r.status, r.body)
		}
		if r := f.do("GET", "/readyz", "", "", "", nil); r.status != http.StatusOK {
			t.Errorf("readyz while a write is held: %d %s", r.status, r.body)
		}
	})
}
