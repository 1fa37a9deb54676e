package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestWebsocketOperationsHaveTheRequestDeadline: a query sent over the
// websocket is stopped at the request timeout, as over HTTP, while its
// statement waits for the database (SQLite's connections taken, or the
// PostgreSQL table locked); the socket stays usable afterwards.
func TestWebsocketOperationsHaveTheRequestDeadline(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f, _ := boundedServer(t, st, func(c *server.Config) { c.RequestTimeout = 300 * time.Millisecond })
		c := f.dialWS(nil)
		c.init(map[string]any{"username": "admin", "apiKey": adminKey})
		// The operation's credential check reads the store too: warm the
		// server's caches with one operation while the database is free.
		c.subscribe("warm", `{ me { username } }`)
		if m, err := c.read(5 * time.Second); err != nil || !strings.Contains(string(m.Payload), `"admin"`) {
			t.Fatalf("first operation: %+v %v", m, err)
		}
		_, _ = c.read(5 * time.Second) // its complete

		release := holdDatabase(t, st, "iocs")
		c.subscribe("slow", `{ iocs(first: 1) { totalCount } }`)
		// Generous: the point is that it ends at all, with TIMEOUT; without a
		// deadline it waits as long as the database is held.
		m, err := c.read(15 * time.Second)
		release()
		if err != nil || m.ID != "slow" || !strings.Contains(string(m.Payload), `"code":"TIMEOUT"`) {
			t.Fatalf("query over the websocket while the database is held: %+v %v, want a TIMEOUT error", m, err)
		}
	})
}

// holdDatabase keeps statements from finishing until release is called
// (once or more): on SQLite it takes every connection of the store's pools,
// on PostgreSQL it locks tables, so that the statements reading them wait.
func holdDatabase(t *testing.T, st *store.Store, tables ...string) (release func()) {
	t.Helper()
	if st.Dialect != store.Postgres {
		return storetest.HoldConnections(t, st)
	}
	ctx := context.Background()
	conn, err := st.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN; LOCK TABLE "+strings.Join(tables, ", ")+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			conn.ExecContext(ctx, "ROLLBACK")
			conn.Close()
		})
	}
}

// TestSubscriptionOverPOSTIsRefused: subscriptions need the websocket; over
// POST one is refused at once with a clear error instead of waiting for an
// event that the request's answer cannot carry.
func TestSubscriptionOverPOSTIsRefused(t *testing.T) {
	f := newFixture(t, storetest.NewSQLite(t))
	// gqlgen's statuses for an operation it cannot run, per media type.
	for accept, status := range map[string]int{"application/json": http.StatusUnprocessableEntity, "application/graphql-response+json": http.StatusBadRequest} {
		t.Run(accept, func(t *testing.T) {
			done := make(chan response, 1)
			go func() {
				done <- f.do("POST", "/graphql", "admin", adminKey,
					`{"query":"subscription { feedStatusChanged { id } }"}`, map[string]string{"Accept": accept})
			}()
			var r response
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("a subscription over POST is still waiting after 10 s")
			}
			if r.status != status || !strings.Contains(string(r.body), "websocket") ||
				!strings.Contains(string(r.body), `"code":"GRAPHQL_VALIDATION_FAILED"`) {
				t.Errorf("subscription over POST: %d %s, want %d and an error naming the websocket", r.status, r.body, status)
			}
		})
	}
}

// TestWebsocketCredentialChecksHaveTheRequestDeadline: a socket lives on,
// but checking its credential is a request's work. With the database held,
// the upgrade's basic auth and connection_init's key are given up at the
// request timeout (the socket is refused with 4403) instead of waiting for
// as long as the database is held.
func TestWebsocketCredentialChecksHaveTheRequestDeadline(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f, _ := boundedServer(t, st, func(c *server.Config) { c.RequestTimeout = 300 * time.Millisecond })
		release := holdDatabase(t, st, "api_keys", "sessions", "users")
		// Released after the test's bound too, so that a failing run ends.
		defer time.AfterFunc(20*time.Second, release).Stop()
		defer release()

		start := time.Now()
		d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 15 * time.Second}
		ws, res, err := d.Dial("ws"+strings.TrimPrefix(f.srv.URL, "http")+"/graphql",
			http.Header{"Authorization": {basicHeader("admin", adminKey)}})
		if err != nil {
			t.Fatalf("upgrade while the database is held: %v (%v) after %v", err, res, time.Since(start))
		}
		defer ws.Close()
		ws.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"username": "admin", "apiKey": adminKey}})
		ws.SetReadDeadline(time.Now().Add(15 * time.Second))
		var m map[string]any
		err = ws.ReadJSON(&m)
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 4403 {
			t.Fatalf("connection_init while the database is held: %v %v after %v, want the socket closed with 4403", m, err, time.Since(start))
		}
	})
}
