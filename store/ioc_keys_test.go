package store_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// Pages read through the key tables (the SCORE order, the tag filter)
// answer what ordering every matching IoC row gives, whatever the key
// indexer has done: before it ran, part way, after IoCs changed score or
// tags or went (stale keys), caught up, and cleaned.
func TestKeyedPagesFollowEveryChange(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feedA, feedB, feedC := newFeed(t, s, "a"), newFeed(t, s, "b"), newFeed(t, s, "c")
		// Six batches, so six change stamps to stop between; scores repeat
		// (ties go by id).
		for b := range 6 {
			var inds []ioc.Indicator
			for i := b * 10; i < b*10+10; i++ {
				tags := []string{"common"}
				if i%5 == 0 {
					tags = append(tags, "rare")
				}
				inds = append(inds, dom(fmt.Sprintf("h%02d.example", i), "src", i%7*10, tags...))
			}
			apply(t, s, store.Batch{FeedID: feedA, Now: t0.Add(time.Duration(b) * time.Minute), Retention: 10 * day, Indicators: inds})
		}
		apply(t, s, store.Batch{FeedID: feedC, Now: t0.Add(time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("c1.example", "src", 100, "rare"), dom("c2.example", "src", 0, "rare"), dom("h03.example", "src", 95)}})
		checkKeyedPages(t, s, "before the indexer")

		caught, err := s.CatchUpKeys(ctx, 15)
		if err != nil || caught {
			t.Fatalf("first chunk: caught %v, %v; want part of the IoCs", caught, err)
		}
		if n := countRows(t, s, "ioc_score_keys"); n == 0 || n >= 63 {
			t.Fatalf("%d score keys after a chunk of 15, want some", n)
		}
		checkKeyedPages(t, s, "part way")

		// Feed B raises some scores and tags others rare; C's feed goes,
		// taking c1 and c2 away and h03's 95. Their keys are stale now.
		var inds []ioc.Indicator
		for i := 1; i < 60; i += 6 {
			inds = append(inds, dom(fmt.Sprintf("h%02d.example", i), "src", 90, "rare"))
		}
		inds = append(inds, dom("b1.example", "src", 30, "rare"))
		apply(t, s, store.Batch{FeedID: feedB, Now: t0.Add(2 * time.Hour), Retention: 10 * day, Indicators: inds})
		if _, err := s.DeleteFeedSightings(ctx, feedC); err != nil {
			t.Fatal(err)
		}
		checkKeyedPages(t, s, "after changes")
		// More changed since the keys than a keyed page sorts: the plain
		// query answers the same.
		saved := *store.RecentKeysMax
		*store.RecentKeysMax = 1
		checkKeyedPages(t, s, "after changes, the keys far behind")
		*store.RecentKeysMax = saved

		for !caught {
			if caught, err = s.CatchUpKeys(ctx, 15); err != nil {
				t.Fatal(err)
			}
		}
		checkKeyedPages(t, s, "caught up")

		// B goes: its IoCs fall back to A's score and tags, b1 goes.
		if _, err := s.DeleteFeedSightings(ctx, feedB); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CatchUpKeys(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		checkKeyedPages(t, s, "caught up after a feed went")
		if stale := staleKeys(t, s); stale == 0 {
			t.Fatal("no stale key to clean: the test changes nothing")
		}
		at := store.KeyPositions{}
		for range 40 { // chunks of 4: a walk through both tables
			if at, err = s.CleanKeys(ctx, at, 4); err != nil {
				t.Fatal(err)
			}
		}
		if stale := staleKeys(t, s); stale != 0 {
			t.Errorf("%d stale keys after cleaning", stale)
		}
		checkKeyedPages(t, s, "cleaned")
	})
}

// The indexer leaves writes alone while they go on, catches up at the
// first quiet tick, and under constant writes takes a chunk once the keys
// have lagged for MaxLag.
func TestKeyIndexerWaitsForQuiet(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		batch := func(n int) {
			var inds []ioc.Indicator
			for i := range 3 {
				inds = append(inds, dom(fmt.Sprintf("n%d-%d.example", n, i), "src", 50, "t"))
			}
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(n) * time.Minute), Retention: 10 * day, Indicators: inds})
		}
		k := &store.KeyIndexer{Store: s, Chunk: 2, MaxLag: time.Minute}
		now := time.Now()
		tick := func() {
			now = now.Add(time.Second)
			if err := k.Tick(ctx, now); err != nil {
				t.Fatal(err)
			}
		}
		batch(0)
		tick() // the first tick sees the writes as new
		if n := countRows(t, s, "ioc_score_keys"); n != 0 {
			t.Fatalf("%d keys while writes went on, want 0", n)
		}
		tick()
		if n := countRows(t, s, "ioc_score_keys"); n != 3 {
			t.Fatalf("%d keys after a quiet tick, want 3", n)
		}
		// Writes every tick: nothing until a minute has passed, then one
		// batch's stamp (chunk 2: a transaction is never split).
		for n := 1; n <= 30; n++ {
			batch(n)
			tick()
		}
		if got := countRows(t, s, "ioc_score_keys"); got != 3 {
			t.Fatalf("%d keys after 30 s of writes, want 3", got)
		}
		for n := 31; n <= 61; n++ {
			batch(n)
			tick()
		}
		if got := countRows(t, s, "ioc_score_keys"); got != 6 {
			t.Fatalf("%d keys after a minute of writes, want 6 (one chunk)", got)
		}
		tick()
		if got := countRows(t, s, "ioc_score_keys"); got != 3*62 {
			t.Fatalf("%d keys after a quiet tick, want %d", got, 3*62)
		}
	})
}

func countRows(t *testing.T, s *store.Store, table string) int {
	t.Helper()
	var n int
	if err := s.DB.QueryRowContext(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

type keyedRow struct {
	id      int64
	value   string
	score   int
	tags    []string
	last    int64
	changed int64
}

// allIoCRows reads every IoC row, for the reference orders.
func allIoCRows(t *testing.T, s *store.Store) []keyedRow {
	t.Helper()
	rows, err := s.DB.QueryContext(context.Background(), "SELECT id, value, score, tags, last_seen, changed_at FROM iocs")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []keyedRow
	for rows.Next() {
		var r keyedRow
		var tags []byte
		if err := rows.Scan(&r.id, &r.value, &r.score, &tags, &r.last, &r.changed); err != nil {
			t.Fatal(err)
		}
		if len(tags) > 0 {
			if err := json.Unmarshal(tags, &r.tags); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func contains(term string) func(keyedRow) bool {
	return func(r keyedRow) bool { return strings.Contains(strings.ToLower(r.value), term) }
}

// staleKeys counts the keys that no longer hold: their IoC went or
// changed since they were made. A key that holds must match its IoC's
// score or one of its tags.
func staleKeys(t *testing.T, s *store.Store) int {
	t.Helper()
	rows := map[int64]keyedRow{}
	for _, r := range allIoCRows(t, s) {
		rows[r.id] = r
	}
	stale := 0
	tables := []string{"ioc_score_keys"}
	if s.Dialect == store.SQLite {
		tables = append(tables, "ioc_tag_keys") // PostgreSQL: a GIN index
	}
	for _, table := range tables {
		col := "score"
		if table == "ioc_tag_keys" {
			col = "tag"
		}
		keys, err := s.DB.QueryContext(context.Background(), "SELECT "+col+", id, stamp FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		for keys.Next() {
			var key string
			var id, stamp int64
			if err := keys.Scan(&key, &id, &stamp); err != nil {
				t.Fatal(err)
			}
			r, ok := rows[id]
			switch {
			case !ok || r.changed != stamp:
				stale++
			case col == "score" && key != fmt.Sprint(r.score), col == "tag" && !slices.Contains(r.tags, key):
				t.Errorf("key %s %s of IoC %d holds but its IoC has score %d, tags %q", col, key, id, r.score, r.tags)
			}
		}
		keys.Close()
	}
	if s.Dialect == store.Postgres {
		// Value keys: a value never changes, its key holds while the IoC
		// is there.
		var values int
		if err := s.DB.QueryRowContext(context.Background(), "SELECT count(*) FROM ioc_value_keys x WHERE NOT EXISTS (SELECT 1 FROM iocs WHERE iocs.id = x.id)").Scan(&values); err != nil {
			t.Fatal(err)
		}
		stale += values
	}
	return stale
}

// checkKeyedPages walks every keyed page kind in pages of 4 and compares
// it with the rows ordered in Go.
func checkKeyedPages(t *testing.T, s *store.Store, state string) {
	t.Helper()
	ctx := context.Background()
	all := allIoCRows(t, s)
	hasRare := func(r keyedRow) bool { return slices.Contains(r.tags, "rare") }
	byID := func(a, b keyedRow) int { return cmp.Compare(a.id, b.id) }
	cases := []struct {
		name   string
		filter store.IoCFilter
		order  store.IoCOrder
		keep   func(keyedRow) bool
		cmp    func(a, b keyedRow) int
	}{
		{"score asc", store.IoCFilter{}, store.IoCOrder{Field: store.IoCOrderScore}, nil,
			func(a, b keyedRow) int { return cmp.Or(cmp.Compare(a.score, b.score), byID(a, b)) }},
		{"score desc", store.IoCFilter{}, store.IoCOrder{Field: store.IoCOrderScore, Desc: true}, nil,
			func(a, b keyedRow) int { return cmp.Or(cmp.Compare(b.score, a.score), byID(b, a)) }},
		{"rare, id", store.IoCFilter{Tag: "rare"}, store.IoCOrder{}, hasRare, byID},
		{"rare, id desc", store.IoCFilter{Tag: "rare"}, store.IoCOrder{Field: store.IoCOrderID, Desc: true}, hasRare,
			func(a, b keyedRow) int { return byID(b, a) }},
		{"rare, score desc", store.IoCFilter{Tag: "rare"}, store.IoCOrder{Field: store.IoCOrderScore, Desc: true}, hasRare,
			func(a, b keyedRow) int { return cmp.Or(cmp.Compare(b.score, a.score), byID(b, a)) }},
		{"rare, last seen", store.IoCFilter{Tag: "rare"}, store.IoCOrder{Field: store.IoCOrderLastSeen}, hasRare,
			func(a, b keyedRow) int { return cmp.Or(cmp.Compare(a.last, b.last), byID(a, b)) }},
		{"rare, min score 40", store.IoCFilter{Tag: "rare", MinScore: ptr(40)}, store.IoCOrder{}, func(r keyedRow) bool { return hasRare(r) && r.score >= 40 }, byID},
		{"common, id desc", store.IoCFilter{Tag: "common"}, store.IoCOrder{Field: store.IoCOrderID, Desc: true},
			func(r keyedRow) bool { return slices.Contains(r.tags, "common") }, func(a, b keyedRow) int { return byID(b, a) }},
		{"search 1.EX", store.IoCFilter{Search: "1.EX"}, store.IoCOrder{}, contains("1.ex"), byID},
		{"search h0, score desc", store.IoCFilter{Search: "h0"}, store.IoCOrder{Field: store.IoCOrderScore, Desc: true}, contains("h0"),
			func(a, b keyedRow) int { return cmp.Or(cmp.Compare(b.score, a.score), byID(b, a)) }},
		{"search c2.example", store.IoCFilter{Search: "c2.example"}, store.IoCOrder{}, contains("c2.example"), byID},
	}
	for _, c := range cases {
		var want []string
		for _, r := range slices.SortedFunc(slices.Values(all), c.cmp) {
			if c.keep == nil || c.keep(r) {
				want = append(want, r.value)
			}
		}
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > len(all) {
				t.Fatalf("%s, %s: more pages than IoCs: %q", state, c.name, got)
			}
			page, err := s.IoCs(ctx, c.filter, c.order, 4, after)
			if err != nil {
				t.Fatalf("%s, %s: %v", state, c.name, err)
			}
			if page.Total != len(want) {
				t.Errorf("%s, %s: total %d, want %d", state, c.name, page.Total, len(want))
			}
			for _, r := range page.IoCs {
				got = append(got, r.Value)
			}
			if !page.HasNextPage {
				break
			}
			after = page.EndCursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s, %s:\n got  %q\n want %q", state, c.name, got, want)
		}
	}
}
