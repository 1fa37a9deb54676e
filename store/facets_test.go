package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestFeedFacetsCountUnderTheOtherFilters(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		for i, f := range []store.Feed{
			{Name: "TSV_a", Type: store.FeedCustom, Category: "TSV", Enabled: true, StatusMessage: "Success", PollingFrequency: 2, RetentionPeriod: 30},
			{Name: "TSV_b", Type: store.FeedCustom, Category: "TSV", Enabled: false, StatusMessage: "Disabled", PollingFrequency: 12, RetentionPeriod: 30},
			{Name: "TAXII_c", Type: store.FeedCustom, Category: "TAXII", Enabled: true, StatusMessage: "Invalid URL", PollingFrequency: 2, RetentionPeriod: 90, BackfillDays: 7},
			{Name: "Phish", Type: store.FeedBuiltin, Category: "phishing", Enabled: true, StatusMessage: "Running", PollingFrequency: 24, RetentionPeriod: 30, Description: "phishing URLs"},
		} {
			f.CreatedAt, f.UpdatedAt = now, now
			f.Kind = fmt.Sprint(i)
			if _, err := s.DB.NewInsert().Model(&f).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		counts := func(search string, filter store.FeedFilter) map[store.FeedFacetColumn]string {
			t.Helper()
			facets, err := s.FeedFacets(ctx, search, filter)
			if err != nil {
				t.Fatal(err)
			}
			out := map[store.FeedFacetColumn]string{}
			for col, values := range facets {
				out[col] = fmt.Sprint(values)
			}
			return out
		}

		all := counts("", store.FeedFilter{})
		for col, want := range map[store.FeedFacetColumn]string{
			store.FacetType:             "[{builtin 1} {custom 3}]",
			store.FacetEnabled:          "[{false 1} {true 3}]",
			store.FacetPollingFrequency: "[{2 2} {12 1} {24 1}]", // numeric order, not text order
			store.FacetRetentionPeriod:  "[{30 3} {90 1}]",
			store.FacetBackfillDays:     "[{0 3} {7 1}]",
			store.FacetDescription:      "[{ 3} {phishing URLs 1}]",
		} {
			if all[col] != want {
				t.Errorf("no filter, %s = %s, want %s", col, all[col], want)
			}
		}

		// Filtering on type=custom leaves the type column's own counts whole
		// (so builtin can still be added) but narrows every other column.
		f := counts("", store.FeedFilter{Types: []store.FeedType{store.FeedCustom}})
		if f[store.FacetType] != "[{builtin 1} {custom 3}]" {
			t.Errorf("type facet under its own filter = %s", f[store.FacetType])
		}
		if f[store.FacetPollingFrequency] != "[{2 2} {12 1}]" {
			t.Errorf("polling facet under type=custom = %s", f[store.FacetPollingFrequency])
		}
		// Two filters: each column is counted under the other one only.
		f = counts("", store.FeedFilter{Types: []store.FeedType{store.FeedCustom}, PollingFrequencies: []int{2}})
		if f[store.FacetType] != "[{builtin 0} {custom 2}]" && f[store.FacetType] != "[{custom 2}]" {
			t.Errorf("type facet under polling=2 = %s", f[store.FacetType])
		}
		if f[store.FacetPollingFrequency] != "[{2 2} {12 1}]" {
			t.Errorf("polling facet under type=custom = %s", f[store.FacetPollingFrequency])
		}
		if f[store.FacetName] != "[{TAXII_c 1} {TSV_a 1}]" {
			t.Errorf("name facet under both = %s", f[store.FacetName])
		}
		// The search applies to every column.
		f = counts("phish", store.FeedFilter{})
		if f[store.FacetType] != "[{builtin 1}]" {
			t.Errorf("type facet under search = %s", f[store.FacetType])
		}
	})
}
