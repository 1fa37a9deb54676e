package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestGraphQLDatabaseDown: a GraphQL operation whose caller is already
// known (cached credentials) but whose data cannot be read answers
// UNAVAILABLE, as REST answers 503 database_unavailable, not an internal
// error, and without the driver's words.
func TestGraphQLDatabaseDown(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st, func(c *server.Config) { c.CredentialTTL = time.Hour })
		if r := f.graphql("admin", adminKey, `{ me { username } }`); r.status != http.StatusOK || strings.Contains(string(r.body), `"errors"`) {
			t.Fatalf("before: %d %s", r.status, r.body)
		}
		st.Close()
		r := f.graphql("admin", adminKey, `{ tenants { id } }`)
		var body struct {
			Errors []struct {
				Message    string
				Extensions struct{ Code string }
			}
		}
		if err := json.Unmarshal(r.body, &body); err != nil || len(body.Errors) == 0 {
			t.Fatalf("%d, want an error: %s", r.status, r.body)
		}
		if code := body.Errors[0].Extensions.Code; code != "UNAVAILABLE" {
			t.Errorf("code %q, want UNAVAILABLE: %s", code, r.body)
		}
		for _, leak := range []string{"sql:", "closed", "sqlite", "pgx", "tifeeds.db", "127.0.0.1"} {
			if strings.Contains(strings.ToLower(string(r.body)), leak) {
				t.Errorf("the answer shows the driver's error (%q): %s", leak, r.body)
			}
		}
	})
}
