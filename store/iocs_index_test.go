package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// The writers keep four indexes on iocs: the primary key, the unique
// (type, value), iocs_changed_idx (TAXII's change order, and the
// changed-since arm of every keyed read) and iocs_feed_idx (the feed of an
// inline sighting, for the feed's sweep, deletion and counts). On SQLite
// every other read goes through the key tables (docs/decisions.md, "Order
// keys"); on PostgreSQL the four orders have their indexes on iocs
// ("PostgreSQL: the orders on indexes again"), and so has an expiry range
// in value order ("An expiry range in value order merges its days, on
// PostgreSQL").
func TestIoCIndexes(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		names := iocIndexes(t, s)
		want := []string{"iocs_changed_idx", "iocs_feed_idx"}
		if s.Dialect == store.Postgres {
			want = []string{"iocs_changed_idx", "iocs_expires_idx", "iocs_expiry_day_value_idx", "iocs_feed_idx", "iocs_first_seen_idx", "iocs_last_seen_idx", "iocs_score_idx"}
		}
		if !slices.Equal(names, want) {
			t.Errorf("indexes on iocs besides its keys: %q, want %q", names, want)
		}
	})
}

// iocIndexes returns the names of the indexes on iocs besides its keys
// (the primary key and the unique (type, value)), in order.
func iocIndexes(t *testing.T, s *store.Store) []string {
	t.Helper()
	query := "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'iocs' AND name NOT LIKE 'sqlite_autoindex_%' ORDER BY 1"
	if s.Dialect == store.Postgres {
		query = "SELECT indexname FROM pg_indexes WHERE tablename = 'iocs' AND indexname NOT IN ('iocs_pkey', 'iocs_type_value_key') ORDER BY 1"
	}
	var names []string
	if err := s.DB.NewRaw(query).Scan(context.Background(), &names); err != nil {
		t.Fatal(err)
	}
	return names
}

// Tag and search filters answer the same IoCs, totals and pages whether
// they match few IoCs (a search: the ids one pass over the values found;
// a tag: its keys) or most (tested IoC by IoC in the
// page's order), in several orders, and search still finds a rule by its
// text.
func TestIoCsByTagAndSearchSparseAndDense(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
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
					wantTotal := min(len(c.want), 3)
					if c.want == nil {
						wantTotal = 3
					}
					seen := pagedValues(t, s, c.filter, o, 4, func(page *store.IoCPage) {
						if page.Total != wantTotal || page.TotalCapped != c.capped {
							t.Errorf("total %d capped %v, want %d %v", page.Total, page.TotalCapped, wantTotal, c.capped)
						}
					})
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

// The value order merges each kind's rows read in its index order: pages
// walked in both directions give what ordering every matching row by
// (value, id) gives, with a value held by two kinds (SHA1 and CERT_SHA1)
// and under filters.
func TestIoCsByValueAcrossKinds(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		hash := strings.Repeat("ab", 20)
		inds := []ioc.Indicator{
			{Kind: ioc.SHA1, Value: hash, Source: "s", Score: 5},
			{Kind: ioc.CertSHA1, Value: hash, Source: "s", Score: 5},
			{Kind: ioc.SHA1, Value: strings.Repeat("0", 40), Source: "s", Score: 5},
			{Kind: ioc.IP, Value: "10.0.0.1", Source: "s", Score: 70},
			{Kind: ioc.IP, Value: "9.9.9.9", Source: "s", Score: 5},
			{Kind: ioc.URL, Value: "http://a.example/x", Source: "s", Score: 70},
		}
		for i := range 9 {
			inds = append(inds, dom(fmt.Sprintf("%c%d.example", 'a'+i*3, i), "s", 10*i))
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: inds})
		// A later batch: ids no longer follow values.
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Hour), Retention: day, Indicators: []ioc.Indicator{
			dom("b0.example", "s", 60), {Kind: ioc.MD5, Value: strings.Repeat("ab", 16), Source: "s", Score: 80}}})
		for name, c := range map[string]struct {
			filter store.IoCFilter
			where  string
		}{
			"all":          {store.IoCFilter{}, "1 = 1"},
			"min score":    {store.IoCFilter{MinScore: ptr(50)}, "score >= 50"},
			"two types":    {store.IoCFilter{Types: []ioc.Kind{ioc.SHA1, ioc.CertSHA1}}, "type IN ('sha1', 'cert_sha1')"},
			"value prefix": {store.IoCFilter{ValuePrefix: "ab"}, "value >= 'ab' AND value < 'ac'"},
		} {
			for _, desc := range []bool{false, true} {
				dir := "ASC"
				if desc {
					dir = "DESC"
				}
				var want []int64
				rows, err := s.DB.QueryContext(ctx, "SELECT id FROM iocs WHERE "+c.where+" ORDER BY value "+dir+", id "+dir)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var id int64
					if err := rows.Scan(&id); err != nil {
						t.Fatal(err)
					}
					want = append(want, id)
				}
				rows.Close()
				if len(want) < 2 {
					t.Fatalf("%s: the filter matches %d IoCs; the test needs more", name, len(want))
				}
				for _, size := range []int{1, 2, 3, 100} {
					t.Run(fmt.Sprintf("%s desc=%v size=%d", name, desc, size), func(t *testing.T) {
						got := pagedIDs(t, s, c.filter, store.IoCOrder{Field: store.IoCOrderValue, Desc: desc}, size, nil)
						if !slices.Equal(got, want) {
							t.Errorf("pages gave ids %v, want %v", got, want)
						}
					})
				}
			}
		}
	})
}

// The type order walks kinds, each in id order: pages in both directions
// give what ordering every IoC by (type, id) gives, whether a kind is read
// through the (type, value) index or in id order (SQLite picks by count).
func TestIoCsByTypeWalk(t *testing.T) {
	for _, dense := range []int{1, 1_000_000} {
		t.Run(fmt.Sprintf("dense=%d", dense), func(t *testing.T) { testIoCsByTypeWalk(t, dense) })
	}
}

func testIoCsByTypeWalk(t *testing.T, dense int) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		was := *store.DenseKind
		*store.DenseKind = dense
		t.Cleanup(func() { *store.DenseKind = was })
		ctx := context.Background()
		feed := newFeed(t, s, fmt.Sprintf("f%d", dense))
		// Three batches: each kind's ids are spread among the others'.
		for b := range 3 {
			inds := []ioc.Indicator{
				{Kind: ioc.SHA1, Value: strings.Repeat(fmt.Sprint(b), 40), Source: "s", Score: 5},
				{Kind: ioc.IP, Value: fmt.Sprintf("10.0.0.%d", b+1), Source: "s", Score: 5},
				{Kind: ioc.URL, Value: fmt.Sprintf("http://a.example/%d", b), Source: "s", Score: 5},
			}
			for i := range 3 {
				inds = append(inds, dom(fmt.Sprintf("d%d-%d.example", b, i), "s", 5))
			}
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(b) * time.Hour), Retention: day, Indicators: inds})
		}
		for _, desc := range []bool{false, true} {
			dir := "ASC"
			if desc {
				dir = "DESC"
			}
			var want []int64
			if err := s.DB.NewRaw("SELECT id FROM iocs ORDER BY type COLLATE \"C\" "+dir+", id "+dir).Scan(ctx, &want); err != nil {
				if s.Dialect != store.SQLite {
					t.Fatal(err)
				}
				if err := s.DB.NewRaw("SELECT id FROM iocs ORDER BY type "+dir+", id "+dir).Scan(ctx, &want); err != nil {
					t.Fatal(err)
				}
			}
			for _, size := range []int{1, 2, 4, 100} {
				t.Run(fmt.Sprintf("desc=%v size=%d", desc, size), func(t *testing.T) {
					got := pagedIDs(t, s, store.IoCFilter{}, store.IoCOrder{Field: store.IoCOrderType, Desc: desc}, size, func(page *store.IoCPage) {
						if page.Total != 18 {
							t.Errorf("total %d, want 18", page.Total)
						}
					})
					if !slices.Equal(got, want) {
						t.Errorf("pages gave ids %v, want %v", got, want)
					}
				})
			}
		}
	})
}
