package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// lookupValues is n distinct valid indicators, as an analyst pastes them.
func lookupValues(n int) []string {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("10.%d.%d.%d", i>>16&0xff, i>>8&0xff, i&0xff)
	}
	return values
}

// aliasedLookups is the reported attack: one variable of values, looked up
// under n aliases.
func aliasedLookups(n int) string {
	var b strings.Builder
	b.WriteString("query Lookups($values: [String!]!) { ")
	for i := range n {
		fmt.Fprintf(&b, "a%d: lookupIocs(values: $values) { input type value known } ", i)
	}
	b.WriteString("}")
	return b.String()
}

// dashboardLookup is the dashboard's own bulk-lookup query (frontend/src/api.ts).
const dashboardLookup = `query LookupIocs($values: [String!]!) {
  lookupIocs(values: $values) {
    input type value known error
    allowlisted { list entry comment }
    ioc { id score tags expirationDate sources { source feed { id name } } }
  }
}`

// TestAliasedLookupsAreCosted: 50 aliases of a 10,000-value lookup (one
// 219 KB request, half a million answers) are refused before any resolver
// runs, over HTTP and over the websocket alike, while the dashboard's
// 10,000-value lookup is still answered.
func TestAliasedLookupsAreCosted(t *testing.T) {
	values := lookupValues(10000)
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st, bigBodies)
		t.Run("over HTTP", func(t *testing.T) {
			r := f.graphqlVars("analyst", f.tenantKey, aliasedLookups(50), map[string]any{"values": values})
			if !strings.Contains(string(r.body), "which exceeds the limit of 20000") ||
				!strings.Contains(string(r.body), `"code":"BAD_USER_INPUT"`) || strings.Contains(string(r.body), `"data":{`) {
				t.Errorf("50 aliased lookups of 10,000 values: %d %.400s, want a complexity refusal", r.status, r.body)
			}
		})
		t.Run("over the websocket", func(t *testing.T) {
			c := f.dialWS(nil)
			c.init(map[string]any{"username": "analyst", "apiKey": f.tenantKey})
			c.send(map[string]any{"id": "1", "type": "subscribe",
				"payload": map[string]any{"query": aliasedLookups(50), "variables": map[string]any{"values": values}}})
			m, err := c.read(30 * time.Second)
			if err != nil || !strings.Contains(string(m.Payload), "which exceeds the limit of 20000") ||
				strings.Contains(string(m.Payload), `"data":{`) {
				t.Errorf("50 aliased lookups of 10,000 values: %s %.400s %v, want a complexity refusal", m.Type, m.Payload, err)
			}
		})
		t.Run("the dashboard's lookup of 10,000 values", func(t *testing.T) {
			r := f.graphqlVars("analyst", f.tenantKey, dashboardLookup, map[string]any{"values": values})
			var body struct {
				Data struct {
					LookupIocs []struct{ Input string }
				}
				Errors []json.RawMessage
			}
			if err := json.Unmarshal(r.body, &body); err != nil || len(body.Errors) > 0 || len(body.Data.LookupIocs) != len(values) {
				t.Fatalf("%d %.400s (%v), want %d answers", r.status, r.body, err, len(values))
			}
			if body.Data.LookupIocs[9999].Input != values[9999] {
				t.Errorf("last answer is for %q, want %q", body.Data.LookupIocs[9999].Input, values[9999])
			}
		})
	})
}
