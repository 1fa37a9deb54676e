package server_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// smallSendBuffers gives each accepted connection a small kernel send
// buffer, so that an answer its client does not read blocks the handler
// after a few kilobytes, not megabytes: a stalled export at once.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// stallExport asks for an IoC export on a connection it never reads past
// the status line, and returns that line ("" if none came within wait: the
// export is waiting for something).
func stallExport(t *testing.T, addr, user, key, path string, wait time.Duration) (net.Conn, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + key))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n", path, auth)
	_ = c.SetReadDeadline(time.Now().Add(wait))
	line, _ := bufio.NewReaderSize(c, 16).ReadString('\n')
	_ = c.SetReadDeadline(time.Time{})
	return c, strings.TrimSpace(line)
}

// TestStalledExportsLeavePagesAndLookups: clients that open exports and
// never read them, more of them than the database's read connections, do
// not hold up IoC pages and lookups: exports read through connections of
// their own, as many as may run at once, and one more is refused at once
// with a JSON error and Retry-After instead of waiting.
func TestStalledExportsLeavePagesAndLookups(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		u, err := st.CreateUser(context.Background(), "second", "second-password", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, secondKey, err := st.CreateAPIKey(context.Background(), u.ID, "test", "")
		if err != nil {
			t.Fatal(err)
		}
		// Three users, so that the overall bound is reached, not only each
		// user's.
		users := [][2]string{{"admin", adminKey}, {"analyst", f.tenantKey}, {"second", secondKey}}
		// Enough rows that an export overflows every buffer on its way.
		seedExport(t, st, 20_000)
		cfg := server.DefaultConfig()
		s := server.New(cfg, st, &graph.Resolver{Store: st}, discardLogger())
		srv := httptest.NewUnstartedServer(s.Handler())
		srv.Listener = smallSendBuffers{srv.Listener}
		srv.Start()
		t.Cleanup(srv.Close)
		addr := strings.TrimPrefix(srv.URL, "http://")

		readers := 4 // store.sqliteReaders
		if st.Dialect == store.Postgres {
			readers = 16 // openPostgres's pool
		}
		stalled := readers + 2
		var (
			mu       sync.Mutex
			statuses = map[string]int{}
			wg       sync.WaitGroup
		)
		for i := range stalled {
			wg.Add(1)
			go func() {
				defer wg.Done()
				path := "/api/export/iocs.csv"
				if i%2 == 1 {
					path = "/api/export/iocs.stix.json"
				}
				u := users[i%len(users)]
				_, line := stallExport(t, addr, u[0], u[1], path, 10*time.Second)
				mu.Lock()
				statuses[line]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		admitted := statuses["HTTP/1.1 200 OK"]
		if admitted != cfg.MaxExports || admitted+statuses["HTTP/1.1 429 Too Many Requests"]+
			statuses["HTTP/1.1 503 Service Unavailable"] != stalled {
			t.Errorf("status lines of %d stalled exports: %v; want %d streaming, the others refused at once",
				stalled, statuses, cfg.MaxExports)
		}

		client := &http.Client{Timeout: 5 * time.Second}
		post := func(name, query string) {
			b, _ := json.Marshal(map[string]string{"query": query})
			req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(string(b)))
			req.SetBasicAuth("admin", adminKey)
			req.Header.Set("Content-Type", "application/json")
			start := time.Now()
			res, err := client.Do(req)
			if err != nil {
				t.Errorf("%s while %d exports are stalled: %v", name, stalled, err)
				return
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if took := time.Since(start); took > time.Second {
				t.Errorf("%s took %v while %d exports are stalled, want within a second", name, took, stalled)
			}
			if res.StatusCode != 200 || strings.Contains(string(body), `"errors"`) || !strings.Contains(string(body), "10.0.0.7") {
				t.Errorf("%s: %d %.300s", name, res.StatusCode, body)
			}
		}
		for range 3 {
			post("a page", `{ iocs(first: 10, filter: {valuePrefix: "10.0.0.7"}) { totalCount nodes { value score } } }`)
			post("a lookup", `{ lookupIocs(values: ["10.0.0.7", "192.0.2.1"]) { input known ioc { value } } }`)
		}

		// One more export is refused at once, clearly.
		req, _ := http.NewRequest("GET", srv.URL+"/api/export/iocs.txt", nil)
		req.SetBasicAuth("admin", adminKey)
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("an export past the bound: %v", err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if (res.StatusCode != http.StatusTooManyRequests && res.StatusCode != http.StatusServiceUnavailable) ||
			res.Header.Get("Retry-After") == "" || errorCode(t, body) != "too_many_exports" {
			t.Errorf("an export past the bound: %d %v %s, want 429 or 503 too_many_exports with Retry-After",
				res.StatusCode, res.Header, firstLineOf(string(body)))
		}
	})
}

// TestExportSlotsComeBack: an export whose client goes away gives its slot
// back, so the bound never locks exports out for good.
func TestExportSlotsComeBack(t *testing.T) {
	st := storetest.NewSQLite(t)
	newFixture(t, st)
	seedExport(t, st, 20_000)
	cfg := server.DefaultConfig()
	s := server.New(cfg, st, &graph.Resolver{Store: st}, discardLogger())
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	var conns []net.Conn
	for range cfg.MaxExports + 1 {
		c, _ := stallExport(t, addr, "admin", adminKey, "/api/export/iocs.csv", 10*time.Second)
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/export/iocs.txt", nil)
		req.SetBasicAuth("admin", adminKey)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("no export after the stalled clients left: %v", err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode == 200 {
			if n < int64(20_000*len("10.0.0.1\n")) {
				t.Errorf("export after the stalled clients left: %d bytes", n)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
