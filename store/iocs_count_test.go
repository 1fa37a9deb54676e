package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// A filtered count stops at the cap and says so; under the cap, and without
// a filter, it is exact. A filter of one tag, one feed or types alone is
// counted by the writers' kept counts: a later batch that retags an IoC,
// a second feed's sightings and a kind named twice count as the IoCs do.
func TestIoCsCountCap(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.IoCCountCap = 3
		feed, other := newFeed(t, s, "capped"), newFeed(t, s, "other")
		var inds []ioc.Indicator
		for i := range 5 {
			inds = append(inds, dom(fmt.Sprintf("d%d.example", i), "src", 10*i, "common"))
		}
		inds[4].Tags = []string{"common", "rare"}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 10 * day, Indicators: inds})
		// The other feed sights d0 again, with its own tag, and a URL.
		apply(t, s, store.Batch{FeedID: other, Now: t0.Add(time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("d0.example", "src", 5, "retagged"),
			{Kind: ioc.URL, Value: "http://d9.example/x", Source: "src", Score: 1, Tags: []string{"retagged"}},
		}})
		score := 20
		for name, c := range map[string]struct {
			filter      store.IoCFilter
			total       int
			capped      bool
			pageEntries int
		}{
			"no filter":            {store.IoCFilter{}, 6, false, 2},
			"tag of a later batch": {store.IoCFilter{Tag: "retagged"}, 2, false, 2},
			"feed of re-sightings": {store.IoCFilter{FeedID: other}, 2, false, 2},
			"kind named twice":     {store.IoCFilter{Types: []ioc.Kind{ioc.URL, ioc.URL}}, 1, false, 1},
			"two kinds":            {store.IoCFilter{Types: []ioc.Kind{ioc.URL, ioc.Domain}}, 3, true, 2},
			"tag and type":         {store.IoCFilter{Tag: "retagged", Types: []ioc.Kind{ioc.Domain}}, 1, false, 1},
			"tag over the cap":     {store.IoCFilter{Tag: "common"}, 3, true, 2},
			"feed over the cap":    {store.IoCFilter{FeedID: feed}, 3, true, 2},
			"type over the cap":    {store.IoCFilter{Types: []ioc.Kind{ioc.Domain}}, 3, true, 2},
			"exactly the cap":      {store.IoCFilter{MinScore: &score}, 3, false, 2},
			"under the cap":        {store.IoCFilter{Tag: "rare"}, 1, false, 1},
			"nothing matches":      {store.IoCFilter{Search: "absent"}, 0, false, 0},
			"search over cap":      {store.IoCFilter{Search: ".EXAMPLE"}, 3, true, 2},
			"prefix, under cap":    {store.IoCFilter{ValuePrefix: "d1"}, 1, false, 1},
			"first 0 still caps":   {store.IoCFilter{Tag: "common"}, 3, true, 0},
		} {
			t.Run(name, func(t *testing.T) {
				first := 2
				if name == "first 0 still caps" {
					first = 0
				}
				page, err := s.IoCs(ctx, c.filter, store.IoCOrder{}, first, "")
				if err != nil {
					t.Fatal(err)
				}
				if page.Total != c.total || page.TotalCapped != c.capped || len(page.IoCs) != c.pageEntries {
					t.Errorf("total %d capped %v, %d IoCs; want %d %v, %d", page.Total, page.TotalCapped, len(page.IoCs),
						c.total, c.capped, c.pageEntries)
				}
			})
		}
	})
}

// A feed filter answers the same IoCs whether the feed holds most IoCs (read
// by probing each IoC) or few of them (read from the feed's index), in
// every page of every order.
func TestIoCsByFeedDenseAndSparse(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.IoCCountCap = 2
		big, small := newFeed(t, s, "big"), newFeed(t, s, "small")
		var all, few []ioc.Indicator
		for i := range 40 {
			all = append(all, dom(fmt.Sprintf("d%02d.example", i), "src", (i*37)%101, "t"))
		}
		for _, i := range []int{3, 17, 31} {
			few = append(few, all[i])
		}
		apply(t, s, store.Batch{FeedID: big, Now: t0, Retention: 10 * day, Indicators: all})
		apply(t, s, store.Batch{FeedID: small, Now: t0, Retention: 10 * day, Indicators: few})
		// Sized by the writers' kept counts: on SQLite the forms meet at
		// sqrt(3 × 2 × 40) ≈ 15 IoCs, on PostgreSQL past the cap.
		for feed, want := range map[int64]bool{big: true, small: s.Dialect == store.Postgres, 99999: false} {
			if dense, err := store.FeedIsDense(ctx, s, feed); err != nil || dense != want {
				t.Errorf("feed %d dense: %v, %v; want %v", feed, dense, err, want)
			}
		}
		for name, c := range map[string]struct {
			feed int64
			want int
		}{"most IoCs": {big, 40}, "few IoCs": {small, 3}} {
			for _, o := range []store.IoCOrder{{}, {Field: store.IoCOrderScore, Desc: true}, {Field: store.IoCOrderValue}} {
				t.Run(fmt.Sprintf("%s %s %v", name, o.Field, o.Desc), func(t *testing.T) {
					seen := map[string]bool{}
					for _, value := range pagedValues(t, s, store.IoCFilter{FeedID: c.feed}, o, 7, func(page *store.IoCPage) {
						if page.Total != 2 || !page.TotalCapped {
							t.Errorf("total %d capped %v, want 2 true", page.Total, page.TotalCapped)
						}
					}) {
						if seen[value] {
							t.Errorf("%s twice", value)
						}
						seen[value] = true
					}
					if len(seen) != c.want {
						t.Errorf("%d IoCs, want %d", len(seen), c.want)
					}
					if c.feed == small && !(seen["d03.example"] && seen["d17.example"] && seen["d31.example"]) {
						t.Errorf("small feed answered %v", seen)
					}
				})
			}
		}
	})
}

// A range of order keys past the cap counts those whose IoC has not changed
// since their key first: when they pass the cap, so does the total. That
// short cut counts only a filter the range proves whole, and the count
// through the rows follows when the unchanged keys fall short (re-sighted
// IoCs keep their score keys, and those keys their old stamps).
func TestOrderRangeCountsPastTheCap(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.IoCCountCap = 3
		feedA, feedB := newFeed(t, s, "a"), newFeed(t, s, "b")
		var inds []ioc.Indicator
		for i := range 6 {
			inds = append(inds, dom(fmt.Sprintf("d%d.example", i), "src", 90))
		}
		inds = append(inds, ioc.Indicator{Kind: ioc.URL, Value: "http://u.example/", Source: "src", Score: 90},
			dom("low1.example", "src", 10), dom("low2.example", "src", 10))
		apply(t, s, store.Batch{FeedID: feedA, Now: t0, Retention: 10 * day, Indicators: inds})
		catchUpAll(t, s.CatchUpKeys, 100)
		score := 90
		check := func(when string) {
			t.Helper()
			for _, c := range []struct {
				filter store.IoCFilter
				total  int
				capped bool
			}{
				{store.IoCFilter{MinScore: &score}, 3, true},
				{store.IoCFilter{MinScore: &score, Types: []ioc.Kind{ioc.URL}}, 1, false},
			} {
				page, err := s.IoCs(ctx, c.filter, store.IoCOrder{}, 2, "")
				if err != nil {
					t.Fatal(err)
				}
				if page.Total != c.total || page.TotalCapped != c.capped {
					t.Errorf("%s: %d types: total %d capped %v, want %d %v", when, len(c.filter.Types), page.Total, page.TotalCapped, c.total, c.capped)
				}
			}
		}
		check("keys made")
		apply(t, s, store.Batch{FeedID: feedB, Now: t0.Add(time.Hour), Retention: 10 * day, Indicators: inds[:6]})
		catchUpAll(t, s.CatchUpKeys, 100)
		check("six re-sighted")
	})
}

// A range of order keys past the cap also passes it when its keys less
// those that may no longer hold do: every key but one for each IoC not
// changed since the keys' stamp. Keys whose IoC moved out of the range
// (re-sighted for longer) count as stale until the indexer drops them, so
// a range at the cap stays exact, and the count believes the kept counts
// of keys only while they make sense.
func TestOrderRangeCountsBoundTheStaleKeys(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.IoCCountCap = 3
		short, long := newFeed(t, s, "short"), newFeed(t, s, "long")
		var soon, later []ioc.Indicator
		for i := range 5 {
			soon = append(soon, dom(fmt.Sprintf("soon%d.example", i), "src", 50))
			later = append(later, dom(fmt.Sprintf("later%d.example", i), "src", 50))
		}
		apply(t, s, store.Batch{FeedID: short, Now: t0, Retention: day, Indicators: soon})
		apply(t, s, store.Batch{FeedID: long, Now: t0, Retention: 30 * day, Indicators: later})
		catchUpAll(t, s.CatchUpKeys, 100)
		before := t0.Add(2 * day)
		count := func(state string, total int, capped bool) {
			t.Helper()
			page, err := s.IoCs(ctx, store.IoCFilter{ExpiresBefore: &before}, store.IoCOrder{}, 2, "")
			if err != nil {
				t.Fatal(err)
			}
			if page.Total != total || page.TotalCapped != capped {
				t.Errorf("%s: total %d capped %v, want %d %v", state, page.Total, page.TotalCapped, total, capped)
			}
		}
		count("five expiring", 3, true)

		// Two of the five now expire in 30 days: three left, their old
		// expiry keys still there.
		apply(t, s, store.Batch{FeedID: long, Now: t0, Retention: 30 * day, Indicators: soon[:2]})
		count("two re-sighted for longer", 3, false)
		if s.Dialect == store.SQLite {
			moveKeptRows := func(n int) {
				t.Helper()
				if _, err := s.DB.ExecContext(ctx, "UPDATE ioc_order_key_rows SET rows = rows + ? WHERE name = 'ioc_expires_keys'", n); err != nil {
					t.Fatal(err)
				}
			}
			// Kept as two keys fewer, the two stale keys look like keys that
			// hold: the count takes the kept counts' word.
			moveKeptRows(-2)
			count("two stale keys not kept", 3, true)
			// Counts that cannot be (fewer keys than IoCs that have one)
			// or more stale keys than the bound reads: the IoCs tell.
			moveKeptRows(-1_000)
			count("kept counts too low", 3, false)
			moveKeptRows(1_000 + 2 + 1_000_000)
			count("more stale keys than the bound reads", 3, false)
			moveKeptRows(-1_000_000)
		}
		catchUpAll(t, s.CatchUpKeys, 100)
		count("caught up", 3, false)
		apply(t, s, store.Batch{FeedID: short, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("soon5.example", "src", 50)}})
		count("a fourth expiring, not yet keyed", 3, true)
	})
}

// keyedStamp counts the IoCs changed since the keys once per stamp and
// version of the IoCs: a write that takes them past what a keyed page
// sorts ends keyed reads at once, and a catch-up brings them back.
func TestKeyedReadsFollowTheChangedCount(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		saved, savedShare := *store.RecentKeysMax, *store.RecentKeysShare
		*store.RecentKeysMax, *store.RecentKeysShare = 5, 1<<40
		t.Cleanup(func() { *store.RecentKeysMax, *store.RecentKeysShare = saved, savedShare })
		feed := newFeed(t, s, "f")
		n := 0
		write := func(count int) {
			t.Helper()
			var inds []ioc.Indicator
			for range count {
				inds = append(inds, dom(fmt.Sprintf("k%03d.example", n), "src", 50, "t"))
				n++
			}
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(n) * time.Second), Retention: 10 * day, Indicators: inds})
		}
		keyed := func(want bool, state string) {
			t.Helper()
			for range 2 { // the second answered from the count kept
				if _, ok, err := store.KeyedStamp(ctx, s); err != nil || ok != want {
					t.Fatalf("%s: keyed %v (%v), want %v", state, ok, err, want)
				}
			}
		}
		write(3)
		keyed(true, "3 changed since the keys")
		write(3)
		keyed(false, "6 changed since the keys")
		catchUpAll(t, s.CatchUpKeys, 100)
		keyed(true, "caught up")
		write(6)
		keyed(false, "6 changed since the caught-up keys")
	})
}

// The IoCs changed since the keys are read from the writers' marks of
// their changes: exact while new IoCs come in, more when some change
// again or a statement reserved stamps it did not use (never fewer than
// changed), none once the keys caught up; the indexer keeps one mark at
// or below its stamp; without one, the IoCs changed since are counted.
func TestChangedSinceTheKeysFromTheMarks(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		var inds []ioc.Indicator
		for i := range 5 {
			inds = append(inds, dom(fmt.Sprintf("m%d.example", i), "src", 50))
		}
		// changed checks the IoCs changed since the keys: from least to
		// most (a change stamp reserved for an IoC that a statement did
		// not write counts too), and never fewer than counted.
		changed := func(least, most int, state string) {
			t.Helper()
			n, err := store.ChangedSinceKeys(ctx, s)
			if err != nil || n < least || n > most {
				t.Fatalf("%s: %d changed since the keys (%v), want %d to %d", state, n, err, least, most)
			}
			var counted int
			if err := s.DB.QueryRowContext(ctx, "SELECT count(*) FROM iocs WHERE changed_at > (SELECT stamp FROM ioc_keys_state)").Scan(&counted); err != nil {
				t.Fatal(err)
			}
			if n < counted {
				t.Fatalf("%s: %d changed since the keys, fewer than the %d counted", state, n, counted)
			}
		}
		catchUpAll(t, s.CatchUpKeys, 100)
		changed(0, 0, "no IoC")
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 10 * day, Indicators: inds})
		changed(5, 5, "5 new")
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Hour), Retention: 10 * day, Indicators: inds[:2]})
		changed(7, 9, "2 of them sighted again")
		catchUpAll(t, s.CatchUpKeys, 100)
		changed(0, 0, "caught up")
		if n := countRows(t, s, "ioc_change_marks"); n != 1 {
			t.Errorf("%d change marks once the keys caught up, want 1", n)
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(2 * time.Hour), Retention: 10 * day, Indicators: inds[:3]})
		changed(3, 6, "3 sighted again since the keys")
		if _, err := s.DB.ExecContext(ctx, "DELETE FROM ioc_change_marks"); err != nil {
			t.Fatal(err)
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(3 * time.Hour), Retention: 10 * day, Indicators: inds[:3]})
		changed(3, 3, "the same 3 again, no mark at or below the keys' stamp: counted")
	})
}

// A minScore page alone is counted from the IoCs kept per score, not
// through the score keys or index: the count follows the kept rows (shown
// by skewing them), capped as any count is.
func TestMinScoreCountsFromTheKeptScores(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.IoCCountCap = 10
		var inds []ioc.Indicator
		for i := range 12 {
			inds = append(inds, dom(fmt.Sprintf("s%02d.example", i), "src", 80+i))
		}
		apply(t, s, store.Batch{FeedID: newFeed(t, s, "f"), Now: t0, Retention: 10 * day, Indicators: inds})
		total := func(min int) (int, bool) {
			t.Helper()
			page, err := s.IoCs(ctx, store.IoCFilter{MinScore: &min}, store.IoCOrder{}, 5, "")
			if err != nil {
				t.Fatal(err)
			}
			return page.Total, page.TotalCapped
		}
		if n, capped := total(85); n != 7 || capped {
			t.Fatalf("minScore 85: total %d (capped %v), want 7", n, capped)
		}
		if n, capped := total(80); n != 10 || !capped {
			t.Fatalf("minScore 80: total %d (capped %v), want the cap, 10", n, capped)
		}
		if _, err := s.DB.ExecContext(ctx, "UPDATE ioc_count_scores SET n = n + 2 WHERE score = 90"); err != nil {
			t.Fatal(err)
		}
		if n, _ := total(85); n != 9 {
			t.Errorf("minScore 85 with score 90's kept count 2 higher: total %d, want 9 (the kept counts)", n)
		}
	})
}
