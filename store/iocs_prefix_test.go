package store_test

import (
	"cmp"
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

// A valuePrefix past the count cap in type order is read kind after kind,
// each kind in id order (pageOfPrefixByKind): its pages, in both
// directions, with kinds and a tag beside the prefix, follow the IoCs
// ordered by kind and id, whichever of the two ways reads each kind, and
// a page's cursor carries over from one kind to the next.
func TestPrefixPagesInTypeOrder(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		all, odd := seedPrefixKinds(t, s)
		savedCap := s.IoCCountCap
		defer func() { s.IoCCountCap = savedCap }()
		s.IoCCountCap = 3
		cases := prefixKindCases(odd)
		for _, c := range cases {
			for _, desc := range []bool{false, true} {
				var want []int64
				for _, r := range slices.SortedFunc(slices.Values(all), func(a, b prefixRow) int {
					if desc {
						a, b = b, a
					}
					return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.ID, b.ID))
				}) {
					if c.keep(r) {
						want = append(want, r.ID)
					}
				}
				for way, takes := range prefixWays {
					restore := takePrefixWay(takes)
					got := pagedIDs(t, s, c.filter, store.IoCOrder{Field: store.IoCOrderType, Desc: desc}, 4, func(page *store.IoCPage) {
						if page.Total != 3 || !page.TotalCapped {
							t.Errorf("%s, desc %v, %s: total %d capped %v, want 3 capped", c.name, desc, way, page.Total, page.TotalCapped)
						}
					})
					restore()
					if !slices.Equal(got, want) {
						t.Errorf("%s, desc %v, %s: pages\n got %v\nwant %v", c.name, desc, way, got, want)
					}
				}
			}
		}
	})
}

// prefixRow is an IoC as the prefix tests order and filter it in Go.
type prefixRow struct {
	ID        int64  `bun:"id"`
	Type      string `bun:"type"`
	Value     string `bun:"value"`
	FirstSeen int64  `bun:"first_seen"`
}

// seedPrefixKinds stores four batches, a minute apart, of IoCs of five
// kinds whose values start with "a" (every other one tagged "odd") or
// not, so that ids interleave the kinds, with IoCs outside the prefix
// between them for a walk to pass. It returns the IoCs stored and which
// values are odd.
func seedPrefixKinds(t *testing.T, s *store.Store) ([]prefixRow, map[string]bool) {
	t.Helper()
	ctx := context.Background()
	feed := newFeed(t, s, "kinds")
	odd := map[string]bool{}
	for b := range 4 {
		var inds []ioc.Indicator
		for i := b * 5; i < b*5+5; i++ {
			var tags []string
			if i%2 == 1 {
				tags = []string{"odd"}
			}
			for _, in := range []ioc.Indicator{
				{Kind: ioc.Domain, Value: fmt.Sprintf("a%02d.example", i)},
				{Kind: ioc.MD5, Value: fmt.Sprintf("a%031x", i)},
				{Kind: ioc.SHA1, Value: fmt.Sprintf("a%039x", i)},
				{Kind: ioc.SHA256, Value: fmt.Sprintf("a%063x", i)},
				{Kind: ioc.Domain, Value: fmt.Sprintf("b%02d.example", i)},
				{Kind: ioc.IP, Value: fmt.Sprintf("10.0.0.%d", i)},
			} {
				in.Source, in.Score, in.Tags = "src", 50, tags
				odd[in.Value] = len(tags) > 0
				inds = append(inds, in)
			}
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(b) * time.Minute), Retention: 10 * day, Indicators: inds})
	}
	var all []prefixRow
	if err := s.DB.NewSelect().Table("iocs").Column("id", "type", "value", "first_seen").Scan(ctx, &all); err != nil {
		t.Fatalf("read iocs: %v", err)
	}
	return all, odd
}

// prefixCase is a filter with a valuePrefix and the IoCs it keeps.
type prefixCase struct {
	name   string
	filter store.IoCFilter
	keep   func(prefixRow) bool
}

// prefixKindCases filter seedPrefixKinds' IoCs by the prefix "a", alone,
// with two kinds and with the tag "odd".
func prefixKindCases(odd map[string]bool) []prefixCase {
	return []prefixCase{
		{"prefix a", store.IoCFilter{ValuePrefix: "a"}, func(r prefixRow) bool { return strings.HasPrefix(r.Value, "a") }},
		{"prefix a, md5 and domains", store.IoCFilter{ValuePrefix: "a", Types: []ioc.Kind{ioc.MD5, ioc.Domain}},
			func(r prefixRow) bool {
				return strings.HasPrefix(r.Value, "a") && (r.Type == "md5" || r.Type == "domain")
			}},
		{"prefix a, odd", store.IoCFilter{ValuePrefix: "a", Tag: "odd"}, func(r prefixRow) bool { return strings.HasPrefix(r.Value, "a") && odd[r.Value] }},
	}
}

// prefixWay is which ways to a page of a prefix past the cap a test
// takes (store.PrefixWays), and whether a small range is read alone
// (store.PrefixHandOff) or races the walk.
type prefixWay struct{ walk, span, raced bool }

// prefixWays is both ways, the range read alone (every range of these
// tests is small) or racing the walk, and each way alone.
var prefixWays = map[string]prefixWay{"both ways": {true, true, false}, "both ways raced": {true, true, true},
	"walked": {true, false, false}, "ranged": {false, true, false}}

// takePrefixWay has the store take w until restore.
func takePrefixWay(w prefixWay) (restore func()) {
	ways := store.PrefixWays(w.walk, w.span)
	alone := func() {}
	if w.raced {
		alone = store.PrefixHandOff(-1)
	}
	return func() { alone(); ways() }
}

// A prefix's range of few entries is read alone, each kind in one
// statement: the walk takes no step. Past the bound (PrefixHandOff) the
// walk races the range. Either way the page's count of its total, which
// counts on to the bound, tells the range's size: the range is counted
// once.
func TestSmallPrefixRangeReadAlone(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		// The prefix's 5 IoCs are the oldest: a walk from the newest
		// meets the 50 others first.
		for b, values := range [][]string{{"zz0", "zz1", "zz2", "zz3", "zz4"}, nil} {
			if b == 1 {
				for i := range 50 {
					values = append(values, fmt.Sprintf("other%02d", i))
				}
			}
			var inds []ioc.Indicator
			for _, v := range values {
				inds = append(inds, dom(v+".example", "src", 50))
			}
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(b) * time.Minute), Retention: 10 * day, Indicators: inds})
		}
		savedCap := s.IoCCountCap
		defer func() { s.IoCCountCap = savedCap }()
		s.IoCCountCap = 3
		for _, c := range []struct {
			name   string
			bound  int
			walked bool
		}{{"a range of 5 under a bound of 30,000", 30_000, false}, {"a range of 5 past a bound of 4", 4, true}} {
			restore := store.PrefixHandOff(c.bound)
			// A walk's first step reads max(3, 2 * 3) IoCs.
			sent := recordStatements(s)
			page, err := s.IoCs(ctx, store.IoCFilter{ValuePrefix: "zz"}, store.IoCOrder{Field: store.IoCOrderID, Desc: true}, 2, "")
			restore()
			if err != nil {
				t.Fatal(err)
			}
			if got := eachIoCs(page.IoCs, func(r store.IoC) string { return r.Value }); !slices.Equal(got, []string{"zz4.example", "zz3.example"}) {
				t.Fatalf("%s: first page of zz newest first: %v", c.name, got)
			}
			if page.Total != 3 || !page.TotalCapped {
				t.Errorf("%s: total %d (capped %v), want the cap, 3, capped", c.name, page.Total, page.TotalCapped)
			}
			var windows, spans, bounded, counts int
			for _, q := range sent() {
				windows += strings.Count(q, "LIMIT 6")
				counts += strings.Count(q, "count(*)")
				if strings.Contains(q, "AS last_value") {
					spans++
					if strings.Contains(q, `"last"`) {
						bounded++
					}
				}
			}
			if walked := windows > 0; walked != c.walked {
				t.Errorf("%s: the walk read %d windows, want it to walk: %v", c.name, windows, c.walked)
			}
			if !c.walked && (spans != 1 || bounded > 0) {
				t.Errorf("%s: the range read %d spans, %d of them to a last entry, want one span to the prefix's end", c.name, spans, bounded)
			}
			// The page's count of its total tells the range's size too.
			if counts != 1 {
				t.Errorf("%s: %d counts, want the page's one", c.name, counts)
			}
		}
		// In value order the page reads the range in the index's own
		// order, and counts only to the cap.
		sent := recordStatements(s)
		if _, err := s.IoCs(ctx, store.IoCFilter{ValuePrefix: "zz"}, store.IoCOrder{Field: store.IoCOrderValue}, 2, ""); err != nil {
			t.Fatal(err)
		}
		for _, q := range sent() {
			if strings.Contains(q, "count(*)") && !strings.Contains(q, "LIMIT 4)") {
				t.Errorf("in value order the page counted past the cap: %s", q)
			}
		}
	})
}

// The prefix's range is read in steps that double, each after the last
// one's final entry. A step that starts within one kind and reaches that
// kind's end goes on into the kinds after it. Past the cap (3: steps of
// 3, 6, 12, ... entries, ending inside and at the ends of the kinds),
// pages in id order both ways and by sighting follow the IoCs ordered in
// Go, whichever way reads them.
func TestPrefixRangeGoesOnIntoLaterKinds(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		all, odd := seedPrefixKinds(t, s)
		// With the order keys made, SQLite's pages by sighting walk them
		// against the range (pageOfPrefixByKeys).
		if _, err := s.CatchUpKeys(context.Background(), 1000); err != nil {
			t.Fatal(err)
		}
		savedCap := s.IoCCountCap
		defer func() { s.IoCCountCap = savedCap }()
		s.IoCCountCap = 3
		for _, c := range prefixKindCases(odd) {
			for _, o := range []store.IoCOrder{{Field: store.IoCOrderID}, {Field: store.IoCOrderID, Desc: true},
				{Field: store.IoCOrderFirstSeen, Desc: true}, {Field: store.IoCOrderLastSeen}} {
				var want []int64
				for _, r := range slices.SortedFunc(slices.Values(all), func(a, b prefixRow) int {
					if o.Desc {
						a, b = b, a
					}
					if o.Field != store.IoCOrderID { // each IoC seen once
						return cmp.Or(cmp.Compare(a.FirstSeen, b.FirstSeen), cmp.Compare(a.ID, b.ID))
					}
					return cmp.Compare(a.ID, b.ID)
				}) {
					if c.keep(r) {
						want = append(want, r.ID)
					}
				}
				for way, takes := range prefixWays {
					restore := takePrefixWay(takes)
					got := pagedIDs(t, s, c.filter, o, 4, nil)
					restore()
					if !slices.Equal(got, want) {
						t.Errorf("%s, %+v, %s: pages\n got %v\nwant %v", c.name, o, way, got, want)
					}
				}
			}
		}
	})
}

// On PostgreSQL the prefix's range can be read from the unique (type,
// value) index alone, which carries each IoC's id (migration
// 20270120000100): the id is all a step of the range needs in id order,
// and fetching each entry's row for it cost a step of 10,000 entries 56 ms
// at 10,000,000 IoCs (6-8 from the index alone). At that size the planner
// takes the index alone; on this test's few thousand rows it would rather
// fetch the rows by a bitmap, and the plans are asked with bitmaps off. A
// step is one statement: its last entry found in the index's order with
// nothing sorted, then its matches read up to that entry.
func TestPrefixRangeReadsTheValueIndexAloneOnPostgres(t *testing.T) {
	s := storetest.NewPostgres(t)
	ctx := context.Background()
	feed := newFeed(t, s, "f")
	for b := range 4 {
		inds := make([]ioc.Indicator, 2500)
		for i := range inds {
			inds[i] = dom(fmt.Sprintf("h%d-%04d.example", b, i), "src", 50)
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(b) * time.Minute), Retention: 10 * day, Indicators: inds})
	}
	// The visibility map set, as autovacuum leaves a table whose rows
	// have settled: an index-only scan then reads no row.
	if _, err := s.DB.ExecContext(ctx, "VACUUM (ANALYZE) iocs"); err != nil {
		t.Fatal(err)
	}
	var def string
	if err := s.DB.QueryRowContext(ctx, "SELECT indexdef FROM pg_indexes WHERE indexname = 'iocs_type_value_key'").Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(def, "(type, value) INCLUDE (id)") {
		t.Errorf("iocs_type_value_key is %q, want (type, value) INCLUDE (id)", def)
	}
	savedCap := s.IoCCountCap
	defer func() { s.IoCCountCap = savedCap }()
	s.IoCCountCap = 100
	defer store.PrefixWays(false, true)()
	sent := recordStatements(s)
	// The prefix h1 has the 2,500 domains of the second batch: steps of
	// 100, 200, ... 1,600 entries, the last reaching the end of the
	// domains, and a probe finding no kind after them with an entry.
	page, err := s.IoCs(ctx, store.IoCFilter{ValuePrefix: "h1"}, store.IoCOrder{Field: store.IoCOrderID, Desc: true}, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.IoCs) != 10 || page.IoCs[0].Value != "h1-2499.example" || page.IoCs[9].Value != "h1-2490.example" {
		t.Fatalf("first page of h1 newest first: %v", eachIoCs(page.IoCs, func(r store.IoC) string { return r.Value }))
	}
	var steps []string
	for _, q := range sent() {
		if strings.Contains(q, `"last"`) {
			steps = append(steps, q)
		}
	}
	if len(steps) != 5 {
		t.Fatalf("%d statements of the range's steps, want 5 (one a step)", len(steps))
	}
	for _, q := range steps {
		nodes := planNodes(t, s, q, "enable_bitmapscan = off")
		// The step's last entry is found through the index alone, in its
		// order (no sort under the limit), and its matches are read
		// through the index alone too: two scans, both of the value index.
		var scans []string
		for _, n := range nodes {
			if strings.Contains(n, "Scan") && n != "CTE Scan" && n != "Subquery Scan" {
				scans = append(scans, n)
			}
		}
		if !slices.Equal(scans, []string{"Index Only Scan iocs_type_value_key", "Index Only Scan iocs_type_value_key"}) {
			t.Errorf("a step of the range reads %q, want the value index alone twice\n%s", scans, q)
		}
		if len(nodes) < 3 || nodes[1] != "Limit" || nodes[2] != "Index Only Scan iocs_type_value_key" {
			t.Errorf("a step's last entry is planned as %q, want a limit of the index's entries in their order\n%s", nodes, q)
		}
	}
}
