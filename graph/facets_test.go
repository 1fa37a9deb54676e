package graph_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestFeedFacetsAPI(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		admin, _ := st.CreateUser(ctx, "admin", "password1", store.ScopeRoot, nil)
		now := time.Now().UTC()
		for i, f := range []store.Feed{
			{Name: "TSV_a", Type: store.FeedCustom, Category: "TSV", Enabled: true, StatusMessage: "Success", PollingFrequency: 2, RetentionPeriod: 30},
			{Name: "TSV_b", Type: store.FeedCustom, Category: "TSV", Enabled: false, StatusMessage: "Disabled", PollingFrequency: 12, RetentionPeriod: 30},
			{Name: "Phish", Type: store.FeedBuiltin, Category: "phishing", Enabled: true, StatusMessage: "Running", PollingFrequency: 24, RetentionPeriod: 30},
		} {
			f.CreatedAt, f.UpdatedAt, f.Kind = now, now, fmt.Sprint(i)
			if _, err := st.DB.NewInsert().Model(&f).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var resp struct {
			Feeds struct {
				TotalCount int
				Facets     []struct {
					Column string
					Values []struct {
						Value string
						Count int
					}
				}
			}
		}
		asUser(t, st, admin).MustPost(`query($f: FeedFilter, $s: String) {
			feeds(filter: $f, search: $s) { totalCount facets { column values { value count } } }
		}`, &resp, client.Var("f", map[string]any{"type": []string{"CUSTOM"}, "enabled": []bool{true}}), client.Var("s", "s"))
		if resp.Feeds.TotalCount != 1 {
			t.Errorf("totalCount = %d, want 1 (TSV_a)", resp.Feeds.TotalCount)
		}
		got := map[string]string{}
		for _, f := range resp.Feeds.Facets {
			got[f.Column] = fmt.Sprint(f.Values)
		}
		// Search "s" matches TSV_a, TSV_b (name) and Phish (name); each
		// column is counted under the other filter only.
		for col, want := range map[string]string{
			"TYPE":              "[{BUILTIN 1} {CUSTOM 1}]", // under enabled=true
			"ENABLED":           "[{false 1} {true 1}]",     // under type=CUSTOM
			"POLLING_FREQUENCY": "[{2 1}]",                  // under both
			"NAME":              "[{TSV_a 1}]",
		} {
			if got[col] != want {
				t.Errorf("facet %s = %s, want %s", col, got[col], want)
			}
		}
		if len(resp.Feeds.Facets) != 8 {
			t.Errorf("got %d facets, want one per filterable column (8)", len(resp.Feeds.Facets))
		}
	})
}
