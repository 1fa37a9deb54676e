package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// snapshotCredentials is every row a credential check could write.
func snapshotCredentials(t *testing.T, st *store.Store) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT id, coalesce(CAST(last_used_at AS TEXT), ''), coalesce(CAST(revoked_at AS TEXT), '') FROM api_keys ORDER BY id",
		"SELECT token_hash, CAST(expires_at AS TEXT) FROM sessions ORDER BY token_hash",
	} {
		rows, err := st.DB.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var x, y, z string
			dest := []any{&x, &y}
			if strings.Contains(q, "api_keys") {
				dest = append(dest, &z)
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatal(err)
			}
			b.WriteString(x + "|" + y + "|" + z + "\n")
		}
		rows.Close()
	}
	return b.String()
}

// An authenticated read writes nothing: API-key use is recorded in memory
// and reaches last_used_at with the next flush.
func TestReadRequestWritesNothing(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		st.KeyUseFlush = time.Hour // flushed below, by hand then by the timer
		f := newFixture(t, st)
		cookie := f.login("analyst", "analyst-password")
		before := snapshotCredentials(t, st)
		for range 3 {
			if r := f.do("GET", api+"/tenants", "analyst", f.tenantKey, "", nil); r.status != http.StatusOK {
				t.Fatalf("GET with the key: %d", r.status)
			}
			if r := f.do("GET", api+"/tenants", "", "", "", map[string]string{"Cookie": cookie}); r.status != http.StatusOK {
				t.Fatalf("GET with the session: %d", r.status)
			}
		}
		if after := snapshotCredentials(t, st); after != before {
			t.Fatalf("reads wrote credentials:\nbefore %s\nafter  %s", before, after)
		}
		if err := st.FlushKeyUses(context.Background()); err != nil {
			t.Fatal(err)
		}
		keys, err := st.APIKeys(context.Background(), analystID(t, st))
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 || keys[0].LastUsedAt == nil || time.Since(*keys[0].LastUsedAt) > time.Minute {
			t.Fatalf("after the flush: %+v, want last_used_at set to about now", keys)
		}
	})
}

// The flush timer writes recorded use without being asked.
func TestKeyUseFlushesOnItsTimer(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		st.KeyUseFlush = 20 * time.Millisecond
		f := newFixture(t, st)
		if r := f.do("GET", api+"/tenants", "analyst", f.tenantKey, "", nil); r.status != http.StatusOK {
			t.Fatalf("GET with the key: %d", r.status)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			keys, err := st.APIKeys(context.Background(), analystID(t, st))
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) == 1 && keys[0].LastUsedAt != nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("last_used_at still unset 10 s after a use")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func analystID(t *testing.T, st *store.Store) int64 {
	t.Helper()
	u, err := st.UserByName(context.Background(), "analyst")
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}

// Cached credentials go at once when revoked on this instance: the very
// next request after the revocation or logout is refused.
func TestRevocationBeatsTheCredentialCache(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st, func(c *server.Config) { c.CredentialTTL = time.Hour })
		keyID, key := userKey(t, st, "admin")
		cookie := f.login("admin", "admin-password")
		withCookie := map[string]string{"Cookie": cookie, "Origin": f.srv.URL}
		for range 2 { // the second answer comes from the cache
			if r := f.do("GET", api+"/tenants", "admin", key, "", nil); r.status != http.StatusOK {
				t.Fatalf("GET with the key: %d", r.status)
			}
			if r := f.do("GET", api+"/tenants", "", "", "", withCookie); r.status != http.StatusOK {
				t.Fatalf("GET with the session: %d", r.status)
			}
		}
		r := f.graphql("admin", adminKey, `mutation { revokeApiKey(id: "`+itoa(int(keyID))+`") }`)
		if !strings.Contains(string(r.body), `"revokeApiKey":true`) {
			t.Fatalf("revoke: %s", r.body)
		}
		if r := f.do("GET", api+"/tenants", "admin", key, "", nil); r.status != http.StatusUnauthorized {
			t.Errorf("GET with the revoked key: %d, want 401", r.status)
		}
		logout := map[string]string{"Cookie": cookie, "Origin": f.srv.URL, "Content-Type": "application/json"}
		if r := f.do("POST", "/api/logout", "", "", "", logout); r.status != http.StatusNoContent {
			t.Fatalf("logout: %d %s", r.status, r.body)
		}
		if r := f.do("GET", api+"/tenants", "", "", "", withCookie); r.status != http.StatusUnauthorized {
			t.Errorf("GET with the ended session: %d, want 401", r.status)
		}
		// The admin's other key stays good.
		if r := f.do("GET", api+"/tenants", "admin", adminKey, "", nil); r.status != http.StatusOK {
			t.Errorf("GET with another key: %d", r.status)
		}
	})
}

// A sign-out whose client goes away before the answer still ends the
// session: the client saw nothing and would take the session for ended.
func TestSignOutFinishesWithoutItsClient(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		cookie := f.login("admin", "admin-password")
		gone, leave := context.WithCancel(context.Background())
		leave()
		req := httptest.NewRequestWithContext(gone, "POST", f.srv.URL+"/api/logout", nil)
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Origin", f.srv.URL)
		req.Header.Set("Content-Type", "application/json")
		f.srv.Config.Handler.ServeHTTP(httptest.NewRecorder(), req)
		withCookie := map[string]string{"Cookie": cookie, "Origin": f.srv.URL}
		if r := f.do("GET", api+"/tenants", "", "", "", withCookie); r.status != http.StatusUnauthorized {
			t.Errorf("GET with the session signed out by a client that left: %d, want 401", r.status)
		}
	})
}
