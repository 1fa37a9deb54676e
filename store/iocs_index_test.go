package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// On PostgreSQL the tag filter has a GIN index over tags (SQLite has none:
// its cost to ingestion, docs/benchmarks.md).
func TestIoCTagIndex(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		if s.Dialect != store.Postgres {
			t.Skip("no tag index on SQLite")
		}
		var n int
		if err := s.DB.QueryRowContext(context.Background(), "SELECT count(*) FROM pg_indexes WHERE indexname = 'iocs_tags_idx'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("iocs_tags_idx: %d, %v", n, err)
		}
	})
}

// Tag and search filters answer the same IoCs, totals and pages whether
// they match few IoCs (a search: the ids one pass over the values found;
// a tag on PostgreSQL: its GIN index) or most (tested IoC by IoC in the
// page's order), in several orders, and search still finds a rule by its
// text.
func TestIoCsByTagAndSearchSparseAndDense(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.IoCCountCap = 3
		feed := newFeed(t, s, "f")
		var inds []ioc.Indicator
		for i := range 30 {
			tags := []string{"common"}
			if i%20 == 7 {
				tags = append(tags, "rare")
			}
			inds = append(inds, dom(fmt.Sprintf("h%02d.example", i), "src", (i*37)%101, tags...))
		}
		inds = append(inds, ioc.Indicator{Kind: ioc.Rule, Value: "sid:42", Source: "src", Score: 50,
			Text: `alert tcp any any -> any any (msg:"Needle-Case"; sid:42;)`, Tags: []string{"common"}})
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 10 * day, Indicators: inds})
		// A later batch gives one more IoC the rare tag: the index follows.
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("h10.example", "src", 1, "common", "rare")}})
		for name, c := range map[string]struct {
			filter store.IoCFilter
			want   []string
			capped bool
		}{
			"rare tag":              {store.IoCFilter{Tag: "rare"}, []string{"h07.example", "h10.example", "h27.example"}, false},
			"rare tag, few":         {store.IoCFilter{Tag: "rare", MinScore: ptr(50)}, []string{"h07.example", "h27.example"}, false},
			"common tag":            {store.IoCFilter{Tag: "common"}, nil, true},
			"absent tag":            {store.IoCFilter{Tag: "none"}, []string{}, false},
			"search, few":           {store.IoCFilter{Search: "7.EX"}, []string{"h07.example", "h17.example", "h27.example"}, false},
			"search, some":          {store.IoCFilter{Search: "h2"}, []string{"h20.example", "h21.example", "h22.example", "h23.example", "h24.example", "h25.example", "h26.example", "h27.example", "h28.example", "h29.example"}, true},
			"search, most":          {store.IoCFilter{Search: ".EXAMPLE"}, nil, true},
			"search, rule text":     {store.IoCFilter{Search: "needle-case"}, []string{"sid:42"}, false},
			"search, like wildcard": {store.IoCFilter{Search: "h_1"}, []string{}, false},
			"search, nothing":       {store.IoCFilter{Search: "absent"}, []string{}, false},
		} {
			for _, o := range []store.IoCOrder{{}, {Field: store.IoCOrderScore, Desc: true}, {Field: store.IoCOrderValue}} {
				t.Run(fmt.Sprintf("%s %s %v", name, o.Field, o.Desc), func(t *testing.T) {
					var seen []string
					after := ""
					for {
						page, err := s.IoCs(ctx, c.filter, o, 4, after)
						if err != nil {
							t.Fatal(err)
						}
						wantTotal := min(len(c.want), 3)
						if c.want == nil {
							wantTotal = 3
						}
						if page.Total != wantTotal || page.TotalCapped != c.capped {
							t.Errorf("total %d capped %v, want %d %v", page.Total, page.TotalCapped, wantTotal, c.capped)
						}
						for _, r := range page.IoCs {
							seen = append(seen, r.Value)
						}
						if !page.HasNextPage {
							break
						}
						after = page.EndCursor
					}
					if len(seen) != len(slices.Compact(slices.Sorted(slices.Values(seen)))) {
						t.Errorf("an IoC twice: %q", seen)
					}
					slices.Sort(seen)
					if c.want != nil && !slices.Equal(seen, c.want) {
						t.Errorf("answered %q, want %q", seen, c.want)
					}
					if c.want == nil && len(seen) < 30 {
						t.Errorf("answered %d IoCs, want at least 30", len(seen))
					}
				})
			}
		}
	})
}
