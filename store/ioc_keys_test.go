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

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// Pages read through the key tables (the SCORE, FIRST_SEEN, LAST_SEEN and
// EXPIRATION_DATE orders, the tag, minScore and expiry filters, search)
// answer what ordering every matching IoC row gives, whatever the key
// indexer has done: before it ran, part way, after IoCs changed score,
// times or tags or went (stale keys), far behind, caught up, and cleaned;
// with few IoCs to each key (read and sorted) and many (walked in the
// page's order).
func TestKeyedPagesFollowEveryChange(t *testing.T) {
	withExpiryZones(t, 8) // the expiry pages in id order walk several zones
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
		if n := tagKeys(t, s); n == 0 || n >= 63 {
			t.Fatalf("%d tag keys after a chunk of 15, want some (63 IoCs are tagged common)", n)
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
		saved, savedShare := *store.RecentKeysMax, *store.RecentKeysShare
		*store.RecentKeysMax, *store.RecentKeysShare = 1, 1<<40
		checkKeyedPages(t, s, "after changes, the keys far behind")
		*store.RecentKeysMax, *store.RecentKeysShare = saved, savedShare

		for !caught {
			if caught, err = s.CatchUpKeys(ctx, 15); err != nil {
				t.Fatal(err)
			}
		}
		checkKeyedPages(t, s, "caught up")
		// An IoC whose column moved loses its key of the old value: the
		// walks of its orders never meet it.
		for table, column := range orderKeyTables(s) {
			if n := countRows(t, s, table+" x JOIN iocs ON iocs.id = x.id WHERE iocs."+column+" <> x.key"); n != 0 {
				t.Errorf("%d stale keys in %s of IoCs that are there, after catching up", n, table)
			}
		}

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
		cleanInPieces(t, s, 80) // a walk through every table
		if stale := staleKeys(t, s); stale != 0 {
			t.Errorf("%d stale keys after cleaning", stale)
		}
		checkKeyedPages(t, s, "cleaned")
	})
}

// A re-sighting moves an IoC's last_seen and expires_at: catching up
// makes those two order keys anew and leaves the IoC's score and
// first-seen keys as they were (written, each costs a write at a random
// place in a table of them all); its tag keys take its new stamp.
func TestResightingMakesOnlyTheKeysThatMoved(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		inds := []ioc.Indicator{dom("a.example", "src", 40, "x"), dom("b.example", "src", 60, "x", "y")}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: inds})
		catchUpAll(t, s.CatchUpKeys, 100)
		made := func() map[string]int64 {
			keys := map[string]int64{}
			for table := range orderKeyTables(s) {
				rows, err := s.DB.QueryContext(ctx, "SELECT key, id, stamp FROM "+table)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var key, id, stamp int64
					if err := rows.Scan(&key, &id, &stamp); err != nil {
						t.Fatal(err)
					}
					keys[fmt.Sprintf("%s %d %d", table, key, id)] = stamp
				}
				rows.Close()
			}
			rows, err := s.DB.QueryContext(ctx, "SELECT tag, id, stamp FROM ioc_tag_keys")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var tag string
				var id, stamp int64
				if err := rows.Scan(&tag, &id, &stamp); err != nil {
					t.Fatal(err)
				}
				keys[fmt.Sprintf("ioc_tag_keys %s %d", tag, id)] = stamp
			}
			return keys
		}
		before := made()
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Hour), Retention: day, Indicators: inds})
		catchUpAll(t, s.CatchUpKeys, 100)
		after := made()
		var kept, anew []string
		for key, stamp := range after {
			if before[key] == stamp {
				kept = append(kept, key)
			} else {
				anew = append(anew, key)
			}
		}
		table := func(key string) string { return strings.Fields(key)[0] }
		for _, key := range kept {
			if t := table(key); t == "ioc_last_seen_keys" || t == "ioc_expires_keys" {
				anew = append(anew, "kept "+key)
			}
		}
		wantKept := 0
		if s.Dialect == store.SQLite {
			wantKept = 4 // score and first seen, each IoC
		}
		slices.Sort(anew)
		if len(kept) != wantKept || len(anew) != len(after)-wantKept {
			t.Errorf("after a re-sighting, %d keys kept, %d made anew %q; want %d kept, the last-seen, expiry and tag keys anew",
				len(kept), len(anew), anew, wantKept)
		}
		if len(after) != len(before) {
			t.Errorf("%d keys after the re-sighting, %d before", len(after), len(before))
		}
		checkKeyedPages(t, s, "re-sighted")
	})
}

// The indexer leaves writes alone while they go on, catches up at the
// first quiet tick, and under constant writes takes a chunk once the keys
// have lagged for MaxLag.
func TestKeyIndexerWaitsForQuiet(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		batch := func(n int) {
			var inds []ioc.Indicator
			for i := range 3 {
				inds = append(inds, dom(fmt.Sprintf("n%d-%d.example", n, i), "src", 50, "t"))
			}
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(n) * time.Minute), Retention: 10 * day, Indicators: inds})
		}
		k := &store.KeyIndexer{Store: s, Chunk: 2, MaxLag: time.Minute}
		tick := ticker(t, k)
		batch(0)
		tick() // the first tick sees the writes as new
		if n := tagKeys(t, s); n != 0 {
			t.Fatalf("%d keys while writes went on, want 0", n)
		}
		tick()
		if n := tagKeys(t, s); n != 3 {
			t.Fatalf("%d keys after a quiet tick, want 3", n)
		}
		// Writes every tick: nothing until a minute has passed, then one
		// chunk of 2 IoCs (each has a stamp of its own: a chunk may end
		// inside a transaction).
		for n := 1; n <= 30; n++ {
			batch(n)
			tick()
		}
		if got := tagKeys(t, s); got != 3 {
			t.Fatalf("%d keys after 30 s of writes, want 3", got)
		}
		for n := 31; n <= 61; n++ {
			batch(n)
			tick()
		}
		if got := tagKeys(t, s); got != 5 {
			t.Fatalf("%d keys after a minute of writes, want 5 (one chunk)", got)
		}
		tick()
		if got := tagKeys(t, s); got != 3*62 {
			t.Fatalf("%d keys after a quiet tick, want %d", got, 3*62)
		}
	})
}

// Under constant writes, once more IoCs changed since the key tables'
// stamp than KeepUnder, the indexer takes chunks every tick, as many as
// its budget allows: the tables stay within a batch or two of the writes
// when it has the time, and it never takes more than its budget.
func TestKeyIndexerKeepsPace(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		writes := newKeyWrites(t, s, feed, "p")
		batch := func() { writes.batch(3) }
		behind := writes.ordersBehind
		// Each chunk takes 100 ms by this clock: five fit in the budget.
		var clockNow time.Time
		clock := func() time.Time { clockNow = clockNow.Add(100 * time.Millisecond); return clockNow }
		k := &store.KeyIndexer{Store: s, Chunk: 2, MaxLag: time.Hour, KeepUnder: 5, Budget: 500 * time.Millisecond, Clock: clock}
		tick := ticker(t, k)
		batch()
		tick()
		for range 10 {
			batch()
			tick()
			if b := behind(); b > 5+3 {
				t.Fatalf("%d IoCs behind the keys after a tick, want at most KeepUnder and a batch (8)", b)
			}
		}
		if b := behind(); b == 0 {
			t.Fatal("caught up under constant writes: the test does not keep writing")
		}
		// A chunk takes a whole second: one a tick, whatever is behind;
		// after the first, the indexer knows an IoC costs 500 ms and sizes
		// its chunks to the budget: one IoC.
		k.Clock = func() time.Time { clockNow = clockNow.Add(time.Second); return clockNow }
		for i := range 5 {
			before := behind()
			batch()
			tick()
			want := before + 3 - 1
			if i == 0 {
				want = before + 3 - 2
			}
			if got := behind(); before > 5 && got != want {
				t.Fatalf("%d IoCs behind after tick %d with a budget of at most one chunk, want %d", got, i, want)
			}
		}
	})
}

// The value keys are complete by id: a re-sighting costs them nothing, and
// a search finds every IoC whose value matches once, before the indexer
// made its key, part way and after.
func TestValueKeysFollowNewIoCs(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feedA, feedB := newFeed(t, s, "a"), newFeed(t, s, "b")
		var old []ioc.Indicator
		for i := range 10 {
			old = append(old, dom(fmt.Sprintf("old%d.example", i), "src", 10))
		}
		apply(t, s, store.Batch{FeedID: feedA, Now: t0, Retention: 10 * day, Indicators: old})
		catchUpAll(t, s.CatchUpKeys, 1000)
		valueKeys := func() int { return countRows(t, s, "ioc_value_keys") }
		if n := valueKeys(); n != 10 {
			t.Fatalf("%d value keys after catching up, want 10", n)
		}
		// B re-sights five of A's IoCs and brings five new ones.
		var second []ioc.Indicator
		for i := range 5 {
			second = append(second, dom(fmt.Sprintf("old%d.example", i), "src", 50), dom(fmt.Sprintf("new%d.example", i), "src", 50))
		}
		apply(t, s, store.Batch{FeedID: feedB, Now: t0.Add(time.Hour), Retention: 10 * day, Indicators: second})
		search := func(when string) {
			t.Helper()
			for _, c := range []struct {
				search string
				want   int
			}{{"old", 10}, {"new", 5}, {"3.ex", 2}, {"w4", 1}} {
				page, err := s.IoCs(ctx, store.IoCFilter{Search: c.search}, store.IoCOrder{}, 100, "")
				if err != nil {
					t.Fatalf("%s: search %q: %v", when, c.search, err)
				}
				seen := map[string]bool{}
				for _, i := range page.IoCs {
					if seen[i.Value] || !strings.Contains(i.Value, c.search) {
						t.Errorf("%s: search %q answered %q twice or not matching", when, c.search, i.Value)
					}
					seen[i.Value] = true
				}
				if len(seen) != c.want || page.Total != c.want {
					t.Errorf("%s: search %q found %d (total %d), want %d", when, c.search, len(seen), page.Total, c.want)
				}
			}
		}
		search("before the indexer")
		catchUpAll(t, s.CatchUpOrderKeys, 3)
		if n := valueKeys(); n != 10 {
			t.Fatalf("%d value keys after the order keys caught up, want the 10 of before", n)
		}
		search("order keys caught up, value keys not")
		caught, err := s.CatchUpValueKeys(ctx, 2)
		if err != nil || caught {
			t.Fatalf("a chunk of 2 of 5 new IoCs: caught %v, %v", caught, err)
		}
		if n := valueKeys(); n != 12 {
			t.Fatalf("%d value keys after a chunk of 2, want 12", n)
		}
		search("value keys part way")
		for !caught {
			if caught, err = s.CatchUpValueKeys(ctx, 2); err != nil {
				t.Fatal(err)
			}
		}
		if n := valueKeys(); n != 15 {
			t.Fatalf("%d value keys after catching up, want 15", n)
		}
		search("caught up")

		// A re-sighting of every IoC leaves the value keys nothing to do.
		apply(t, s, store.Batch{FeedID: feedA, Now: t0.Add(2 * time.Hour), Retention: 10 * day, Indicators: append(old, second...)})
		before := countRows(t, s, "ioc_keys_state WHERE value_id = (SELECT max(id) FROM iocs)")
		if caught, err = s.CatchUpValueKeys(ctx, 1000); err != nil || !caught || before != 1 {
			t.Fatalf("value keys after a re-sighting: complete before %v, caught %v, %v; want complete with nothing to do", before == 1, caught, err)
		}
		search("after a re-sighting")
	})
}

// The indexer makes the value keys after the order and tag keys, in what
// its budget leaves of a tick and half a budget at least: with budget
// left, they keep pace; while the order keys take the budget, they still
// move; a quiet tick completes both.
func TestKeyIndexerMakesValueKeysAfterOrderKeys(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		writes := newKeyWrites(t, s, feed, "v")
		batch := func() { writes.batch(3) }
		ordersBehind, valuesBehind := writes.ordersBehind, writes.valuesBehind
		// Each reading of the clock is 100 ms later: a tick has time for
		// a few chunks of 2.
		var clockNow time.Time
		clock := func() time.Time { clockNow = clockNow.Add(100 * time.Millisecond); return clockNow }
		k := &store.KeyIndexer{Store: s, Chunk: 2, MaxLag: time.Hour, KeepUnder: 5, Budget: 500 * time.Millisecond, Clock: clock}
		tick := ticker(t, k)
		for range 10 {
			batch()
			tick()
			if b := valuesBehind(); b > 5+3 {
				t.Fatalf("%d new IoCs without a value key after a tick with budget left, want at most KeepUnder and a batch (8)", b)
			}
		}
		// A chunk takes a whole second: the order keys take the budget
		// and fall behind; the value keys still get half a budget, a
		// chunk a tick (of one IoC once they know what one costs).
		k.Clock = func() time.Time { clockNow = clockNow.Add(time.Second); return clockNow }
		busy := false
		for range 8 {
			ordersBefore, valuesBefore := ordersBehind(), valuesBehind()
			batch()
			tick()
			if ordersBefore > 5 && valuesBefore > 5 {
				busy = true
				if got := valuesBehind(); got >= valuesBefore+3 {
					t.Fatalf("value keys went from %d to %d behind while the order keys took the budget, want some made", valuesBefore, got)
				}
			}
		}
		if !busy {
			t.Fatal("the order and value keys never both lagged by more than KeepUnder: the test does not share the budget")
		}
		k.Clock = nil
		tick()
		tick()
		if o, v := ordersBehind(), valuesBehind(); o != 0 || v != 0 {
			t.Fatalf("after quiet ticks %d IoCs behind the order keys and %d without a value key, want none", o, v)
		}
	})
}

// A quiet catch-up goes on only while no IoC changes: a batch that commits
// between two of its chunks (one that waited for SQLite's writer while a
// chunk held it) ends it, and the next tick keeps to the budget.
func TestQuietCatchUpStopsAtAWrite(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		writes := newKeyWrites(t, s, feed, "q")
		batch := writes.batch
		behind := writes.ordersBehind
		batch(40)
		// The clock's second reading comes once the first chunk has
		// committed: a batch goes in then, as one waiting for the writer.
		readings := 0
		clock := func() time.Time {
			readings++
			if readings == 2 {
				batch(3)
			}
			return time.Now()
		}
		k := &store.KeyIndexer{Store: s, Chunk: 5, MaxLag: time.Hour, KeepUnder: 1000, Clock: clock}
		tick := ticker(t, k)
		tick() // the writes are new to it: nothing, with fewer than KeepUnder behind
		if got := behind(); got != 40 {
			t.Fatalf("%d IoCs behind after a tick that saw writes, want 40", got)
		}
		tick() // quiet: catches up, until the batch
		if got, want := behind(), 40-5+3; got != want {
			t.Fatalf("%d IoCs behind after a quiet catch-up that a batch interrupted, want %d", got, want)
		}
	})
}

// Only the time a chunk holds the store counts against the indexer's
// budget, not its wait for the IoC writer: a tick whose first chunk waited
// behind a batch longer than the whole budget still catches up what the
// budget allows.
func TestKeyIndexerBudgetsHoldingNotWaiting(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		writes := newKeyWrites(t, s, newFeed(t, s, "f"), "w")
		writes.batch(40)
		// A writer holds the store for longer than the budget.
		release := holdWriter(t, s)
		const budget = 2 * time.Second
		released := make(chan struct{})
		go func() {
			time.Sleep(budget + budget/4)
			release()
			close(released)
		}()
		k := &store.KeyIndexer{Store: s, Chunk: 5, MaxLag: time.Hour, KeepUnder: 1, Budget: budget}
		ticker(t, k)()
		<-released
		if n := writes.ordersBehind(); n != 0 {
			t.Errorf("%d IoCs behind the order keys after a tick that waited for the writer, want none: the wait counted against the budget", n)
		}
	})
}

// The cleaner rests once it has been through every key table with nothing
// changed meanwhile, and goes again when the IoCs change.
func TestKeyCleanerRestsUntilAChange(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		batch := func(n int) {
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(n) * time.Minute), Retention: 10 * day,
				Indicators: []ioc.Indicator{dom(fmt.Sprintf("r%d.example", n), "src", 50, "t")}})
		}
		k := &store.KeyIndexer{Store: s, Chunk: 2}
		tick := ticker(t, k)
		batch(0)
		for range 20 { // quiet: keys made, every table cleaned
			tick()
		}
		// A key no IoC holds, made without a change of the IoCs: a
		// resting cleaner leaves it.
		storetest.MustExec(t, s, "INSERT INTO ioc_tag_keys (tag, id, stamp) VALUES ('t', 999999, 1)")
		for range 20 {
			tick()
		}
		if n := countRows(t, s, "ioc_tag_keys WHERE id = 999999"); n != 1 {
			t.Fatalf("the resting cleaner took the key (%d left)", n)
		}
		batch(1)
		for range 20 {
			tick()
		}
		if n := countRows(t, s, "ioc_tag_keys WHERE id = 999999"); n != 0 {
			t.Errorf("the stale key is still there after a change and 20 quiet ticks")
		}
	})
}

// The cleaner's pass is kept in the store: an indexer that starts (a
// restarted process, another instance) goes on where the last one
// stopped, and a pass that rests stays at rest, rather than walking every
// key table again from its start.
func TestKeyCleanerGoesOnWhereTheLastIndexerStopped(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feedWithAnIoC(t, s)
		// Stale keys after the IoC's ('t', id): a pass takes a chunk of two
		// a quiet tick through them.
		addStaleTagKeys(t, s, "z", 10)
		first := ticker(t, &store.KeyIndexer{Store: s, Chunk: 2})
		for range 7 { // a tick that saw the batch, the quiet's first 5 s, then two chunks
			first()
		}
		left := countRows(t, s, "ioc_tag_keys WHERE tag = 'z'")
		if left == 0 || left == 10 {
			t.Fatalf("%d of 10 stale keys left after two chunks of two: the test needs a pass part way", left)
		}
		// A stale key behind the pass, made without a change of the IoCs:
		// a pass that goes on leaves it to the next one.
		storetest.MustExec(t, s, "INSERT INTO ioc_tag_keys (tag, id, stamp) VALUES ('a', 999999, 1)")
		// Each indexer after the first is a process that started: 25 quiet
		// ticks are enough for a pass.
		nextIndexer := func() {
			tick := ticker(t, &store.KeyIndexer{Store: s, Chunk: 2})
			for range 25 {
				tick()
			}
		}
		nextIndexer()
		if n := countRows(t, s, "ioc_tag_keys WHERE tag = 'z'"); n != 0 {
			t.Errorf("%d stale keys left after 25 quiet ticks of the next indexer", n)
		}
		if n := countRows(t, s, "ioc_tag_keys WHERE tag = 'a'"); n != 1 {
			t.Errorf("the next indexer walked the tag keys from their start again (the key behind the pass is gone)")
		}
		// Through every table with nothing changed, the pass rests for the
		// indexers that come after too.
		storetest.MustExec(t, s, "INSERT INTO ioc_tag_keys (tag, id, stamp) VALUES ('z', 999999, 1)")
		nextIndexer()
		if n := countRows(t, s, "ioc_tag_keys WHERE tag = 'z'"); n != 1 {
			t.Errorf("an indexer that started after the pass came to rest cleaned again (%d of 1 stale key left)", n)
		}
	})
}

// A pass the store cannot read (another version's, or damaged) is only
// where to look next: the cleaner starts a new one rather than failing.
func TestKeyCleanerStartsOverFromAPassItCannotRead(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feedWithAnIoC(t, s)
		storetest.MustExec(t, s, "INSERT INTO ioc_tag_keys (tag, id, stamp) VALUES ('z', 999999, 1)")
		storetest.MustExec(t, s, `UPDATE ioc_key_cleaner SET state = '{"at": {"Orders": "no"}, "resting": 7' WHERE id = 1`)
		tick := ticker(t, &store.KeyIndexer{Store: s, Chunk: 2})
		for range 10 {
			tick()
		}
		if n := countRows(t, s, "ioc_tag_keys WHERE tag = 'z'"); n != 0 {
			t.Errorf("the stale key is still there after 10 quiet ticks from a pass the store could not read")
		}
	})
}

// The cleaner waits for the IoCs to have stayed as they were for
// CleanAfter: a second without a commit is common during an ingest run.
func TestKeyCleanerWaitsForTheQuietToLast(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feedWithAnIoC(t, s)
		storetest.MustExec(t, s, "INSERT INTO ioc_tag_keys (tag, id, stamp) VALUES ('z', 999999, 1)")
		tick := ticker(t, &store.KeyIndexer{Store: s, Chunk: 100, CleanAfter: 3 * time.Second})
		for n := range 3 { // the tick that saw the batch, then 2 s of quiet
			tick()
			if countRows(t, s, "ioc_tag_keys WHERE tag = 'z'") != 1 {
				t.Fatalf("the cleaner took the stale key at tick %d, %d s into the quiet, want after 3 s", n+1, n)
			}
		}
		tick()
		if n := countRows(t, s, "ioc_tag_keys WHERE tag = 'z'"); n != 0 {
			t.Errorf("the stale key is still there 3 s into the quiet")
		}
	})
}

// The sweeper's deletes do not move the change stamp the indexer's quiet
// is read from: the cleaner waits until the IoCs' version stands still as
// well, rather than taking a chunk every second of a sweep beside it.
func TestKeyCleanerWaitsWhileTheSweeperDeletes(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		const swept = 8
		for n := range swept + 1 { // one IoC expiring a minute after the one before
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(n) * time.Minute), Retention: day,
				Indicators: []ioc.Indicator{dom(fmt.Sprintf("g%d.example", n), "src", 50, "t")}})
		}
		// Stale keys the pass comes to first.
		addStaleTagKeys(t, s, "a", 6)
		tick := ticker(t, &store.KeyIndexer{Store: s, Chunk: 2})
		tick() // the writes are new to it
		for n := range swept {
			if _, gone, err := s.SweepExpired(ctx, t0.Add(day+time.Duration(n)*time.Minute), 0); err != nil || gone != 1 {
				t.Fatalf("sweep %d: %d IoCs gone, %v; want 1", n, gone, err)
			}
			tick()
		}
		if n := countRows(t, s, "ioc_tag_keys WHERE tag = 'a'"); n != 6 {
			t.Fatalf("%d of 6 stale keys left after %d ticks each after a sweep: the cleaner ran beside the sweeper", n, swept)
		}
		for range 15 {
			tick()
		}
		if n := countRows(t, s, "ioc_tag_keys WHERE tag = 'a'"); n != 0 {
			t.Errorf("%d stale keys left after 15 quiet ticks", n)
		}
		if n := countRows(t, s, "ioc_tag_keys WHERE tag = 't'"); n != 1 {
			t.Errorf("%d keys of tag t after the swept IoCs' went, want the one left's", n)
		}
	})
}

// A batch of this process under way stops the cleaner though nothing has
// committed yet: an ingest run's first batch committed a second or more
// after the last change, and the cleaner took its chunks beside it.
func TestKeyCleanerStopsForABatchUnderWay(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := feedWithAnIoC(t, s)
		addStaleTagKeys(t, s, "z", 6)
		tick := ticker(t, &store.KeyIndexer{Store: s, Chunk: 2})
		for range 6 { // the writes new to it, the keys made, 5 s of quiet, the cleaner's first chunk
			tick()
		}
		left := countRows(t, s, "ioc_tag_keys WHERE tag = 'z'")
		if left == 0 || left == 6 {
			t.Fatalf("%d of 6 stale keys left after the first quiet tick: the test needs a pass part way", left)
		}
		// A writer holds the store: the next batch waits for it.
		release := holdWriter(t, s)
		applied := make(chan error, 1)
		go func() {
			_, err := s.ApplyBatch(ctx, store.Batch{FeedID: feed, Now: t0.Add(time.Minute), Retention: 10 * day,
				Indicators: []ioc.Indicator{dom("s.example", "src", 50, "t")}})
			applied <- err
		}()
		waitForWrites(t, s, 1)
		for range 3 {
			tick()
		}
		var n int // through the readers: SQLite's writer is held
		if err := store.Reader(s).QueryRowContext(ctx, "SELECT count(*) FROM ioc_tag_keys WHERE tag = 'z'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != left {
			t.Errorf("%d of %d stale keys left after 3 ticks beside a batch under way: the cleaner ran beside it", n, left)
		}
		release()
		if err := <-applied; err != nil {
			t.Fatal(err)
		}
		waitForWrites(t, s, 0)
		for range 15 {
			tick()
		}
		if n := countRows(t, s, "ioc_tag_keys WHERE tag = 'z'"); n != 0 {
			t.Errorf("%d stale keys left after the batch and 15 quiet ticks", n)
		}
	})
}

// Writes that never stay still for CleanAfter do not keep the cleaner out
// for good: after CleanStarved it takes one piece (a fifth of a chunk of
// each table) every CleanAfter while they go on.
func TestKeyCleanerTakesAPieceAtATimeWhenTheWritesNeverStop(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := feedWithAnIoC(t, s)
		// Stale keys the pass comes to first, a piece (one key) at a time.
		addStaleTagKeys(t, s, "a", 10)
		tick := ticker(t, &store.KeyIndexer{Store: s, Chunk: 5, CleanAfter: 3 * time.Second, CleanStarved: 10 * time.Second})
		written := 0
		writeThenTick := func() {
			written++
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(written) * time.Minute), Retention: 10 * day,
				Indicators: []ioc.Indicator{dom(fmt.Sprintf("w%d.example", written), "src", 50, "t")}})
			tick()
		}
		stale := func() int { return countRows(t, s, "ioc_tag_keys WHERE tag = 'a'") }
		for n := range 10 { // the ticks at 1-10 s, a batch before each
			writeThenTick()
			if left := stale(); left != 10 {
				t.Fatalf("%d of 10 stale keys left at tick %d, %d s into writes that never stop: want the cleaner to wait 10 s", left, n+1, n)
			}
		}
		// Each row: after the tick at that second, the stale keys left.
		for n, want := range []int{9, 9, 9, 8, 8, 8, 7} { // 11 s, then a piece every 3 s
			writeThenTick()
			if left := stale(); left != want {
				t.Fatalf("%d of 10 stale keys left at tick %d, %d s into writes that never stop: want %d", left, n+11, n+10, want)
			}
		}
	})
}

// A sweep under way counts as a write too, from before its first
// transaction to its return.
func TestSweepCountsAsAWriteUnderWay(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day,
			Indicators: []ioc.Indicator{dom("g.example", "src", 50, "t")}})
		release := holdWriter(t, s)
		swept := make(chan error, 1)
		go func() {
			_, _, err := s.SweepExpired(ctx, t0.Add(2*day), 0)
			swept <- err
		}()
		waitForWrites(t, s, 1)
		release()
		if err := <-swept; err != nil {
			t.Fatal(err)
		}
		waitForWrites(t, s, 0)
	})
}

// feedWithAnIoC makes a feed with one IoC, tagged t, and returns the feed.
func feedWithAnIoC(t *testing.T, s *store.Store) (feed int64) {
	t.Helper()
	feed = newFeed(t, s, "f")
	apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 10 * day,
		Indicators: []ioc.Indicator{dom("r.example", "src", 50, "t")}})
	return feed
}

// addStaleTagKeys adds n keys of tag that no IoC holds (ids 1000 on),
// without a change of the IoCs.
func addStaleTagKeys(t *testing.T, s *store.Store, tag string, n int) {
	t.Helper()
	for id := 1000; id < 1000+n; id++ {
		storetest.MustExec(t, s, fmt.Sprintf("INSERT INTO ioc_tag_keys (tag, id, stamp) VALUES ('%s', %d, 1)", tag, id))
	}
}

// holdWriter holds the store's IoC writes until release is called:
// SQLite's one writing connection, PostgreSQL's IoC write lock.
func holdWriter(t *testing.T, s *store.Store) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	hold := "UPDATE ioc_stats SET version = version WHERE id = 1"
	if s.Dialect == store.Postgres {
		hold = fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", store.IoCWriteLockID)
	}
	if _, err := tx.ExecContext(ctx, hold); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Rollback(); err != nil {
			t.Error(err)
		}
	}
}

// waitForWrites waits until n writes of s are under way.
func waitForWrites(t *testing.T, s *store.Store, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); store.WritesUnderWay(s) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes under way, want %d", store.WritesUnderWay(s), n)
		}
	}
}

// tagKeys counts the tag keys: in the tests that count them, made with
// the order keys, each IoC has one tag.
func tagKeys(t *testing.T, s *store.Store) int {
	t.Helper()
	return countRows(t, s, "ioc_tag_keys")
}

// orderKeyTables returns the tables of the orders' keys, each with the
// column of iocs its keys are: none on PostgreSQL, whose indexes on iocs
// serve the orders.
func orderKeyTables(s *store.Store) map[string]string {
	if s.Dialect == store.Postgres {
		return nil
	}
	return map[string]string{"ioc_score_keys": "score", "ioc_first_seen_keys": "first_seen",
		"ioc_last_seen_keys": "last_seen", "ioc_expires_keys": "expires_at"}
}

// checkKeptKeyRows compares each order's kept count of its keys
// (ioc_order_key_rows), which the range counts trust, with its table.
func checkKeptKeyRows(t *testing.T, s *store.Store, state string) {
	t.Helper()
	for table := range orderKeyTables(s) {
		var kept int
		if err := s.DB.QueryRowContext(context.Background(), "SELECT rows FROM ioc_order_key_rows WHERE name = ?", table).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, s, table); n != kept {
			t.Errorf("%s: %s holds %d keys, its kept count says %d", state, table, n, kept)
		}
	}
}

// orderKeyCount counts the rows of every order's keys, each table followed
// by rest (an alias, joins, a condition).
func orderKeyCount(t *testing.T, s *store.Store, rest string) int {
	t.Helper()
	n := 0
	for table := range orderKeyTables(s) {
		n += countRows(t, s, table+rest)
	}
	return n
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
	first   int64
	last    int64
	expires int64
	changed int64
}

// column is r's value of a column of iocs that has order keys.
func (r keyedRow) column(name string) int64 {
	return map[string]int64{"score": int64(r.score), "first_seen": r.first, "last_seen": r.last, "expires_at": r.expires}[name]
}

// allIoCRows reads every IoC row, for the reference orders.
func allIoCRows(t *testing.T, s *store.Store) []keyedRow {
	t.Helper()
	rows, err := s.DB.QueryContext(context.Background(), "SELECT id, value, score, tags, first_seen, last_seen, expires_at, changed_at FROM iocs")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []keyedRow
	for rows.Next() {
		var r keyedRow
		var tags []byte
		if err := rows.Scan(&r.id, &r.value, &r.score, &tags, &r.first, &r.last, &r.expires, &r.changed); err != nil {
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

// staleKeys counts the keys that no longer hold: their IoC went, its
// value of the order moved or, for a tag key, it changed.
func staleKeys(t *testing.T, s *store.Store) int {
	t.Helper()
	ctx := context.Background()
	rows := map[int64]keyedRow{}
	for _, r := range allIoCRows(t, s) {
		rows[r.id] = r
	}
	stale := 0
	scan := func(query string, check func(key string, r keyedRow) bool) {
		keys, err := s.DB.QueryContext(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		defer keys.Close()
		for keys.Next() {
			var key string
			var id int64
			if err := keys.Scan(&key, &id); err != nil {
				t.Fatal(err)
			}
			r, ok := rows[id]
			if !ok || !check(key, r) {
				stale++ // its IoC went, or its column or tags moved
			}
		}
		if err := keys.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for table, column := range orderKeyTables(s) {
		scan("SELECT key, id FROM "+table, func(key string, r keyedRow) bool { return key == fmt.Sprint(r.column(column)) })
	}
	// A tag key holds while its stamp is its IoC's change stamp.
	scan("SELECT tag || ' ' || stamp, id FROM ioc_tag_keys", func(key string, r keyedRow) bool {
		tag, stamp, _ := strings.Cut(key, " ")
		return slices.Contains(r.tags, tag) && stamp == fmt.Sprint(r.changed)
	})
	// Value keys: a value never changes, its key holds while the IoC is
	// there. On SQLite the key's id is the FTS5 table's rowid.
	id := "x.id"
	if s.Dialect == store.SQLite {
		id = "x.rowid"
	}
	var values int
	if err := s.DB.QueryRowContext(ctx, "SELECT count(*) FROM ioc_value_keys x WHERE NOT EXISTS (SELECT 1 FROM iocs WHERE iocs.id = "+id+")").Scan(&values); err != nil {
		t.Fatal(err)
	}
	return stale + values
}

// keyedCase is a page kind of checkKeyedPages: the filter and order, and
// the rows' reference: which match, in which order.
type keyedCase struct {
	name   string
	filter store.IoCFilter
	order  store.IoCOrder
	keep   func(keyedRow) bool
	cmp    func(a, b keyedRow) int
}

// keyedOrder is the reference of an order: by the column, then id, both
// ways.
func keyedOrder(col func(keyedRow) int64, desc bool) func(a, b keyedRow) int {
	if desc {
		return func(a, b keyedRow) int { return cmp.Or(cmp.Compare(col(b), col(a)), cmp.Compare(b.id, a.id)) }
	}
	return func(a, b keyedRow) int { return cmp.Or(cmp.Compare(col(a), col(b)), cmp.Compare(a.id, b.id)) }
}

// keyedCases are every page kind read through keys, on the IoCs of
// TestKeyedPagesFollowEveryChange.
func keyedCases() []keyedCase {
	id := func(r keyedRow) int64 { return r.id }
	score := func(r keyedRow) int64 { return int64(r.score) }
	first := func(r keyedRow) int64 { return r.first }
	last := func(r keyedRow) int64 { return r.last }
	expires := func(r keyedRow) int64 { return r.expires }
	order := func(f store.IoCOrderField, desc bool) store.IoCOrder { return store.IoCOrder{Field: f, Desc: desc} }
	has := func(tag string) func(r keyedRow) bool {
		return func(r keyedRow) bool { return slices.Contains(r.tags, tag) }
	}
	and := func(a, b func(keyedRow) bool) func(keyedRow) bool {
		return func(r keyedRow) bool { return a(r) && b(r) }
	}
	// Feed A's first three batches expire before soon; B's and C's
	// sightings after late.
	soon, late := t0.Add(10*day+150*time.Second), t0.Add(10*day+30*time.Minute)
	before := func(r keyedRow) bool { return r.expires < soon.UnixMicro() }
	after := func(r keyedRow) bool { return r.expires > late.UnixMicro() }
	minScore := func(r keyedRow) bool { return r.score >= 40 }
	cases := []keyedCase{
		{"rare, id", store.IoCFilter{Tag: "rare"}, store.IoCOrder{}, has("rare"), keyedOrder(id, false)},
		{"rare, id desc", store.IoCFilter{Tag: "rare"}, order(store.IoCOrderID, true), has("rare"), keyedOrder(id, true)},
		{"rare, score desc", store.IoCFilter{Tag: "rare"}, order(store.IoCOrderScore, true), has("rare"), keyedOrder(score, true)},
		{"rare, last seen", store.IoCFilter{Tag: "rare"}, order(store.IoCOrderLastSeen, false), has("rare"), keyedOrder(last, false)},
		{"rare, min score 40", store.IoCFilter{Tag: "rare", MinScore: ptr(40)}, store.IoCOrder{}, and(has("rare"), minScore), keyedOrder(id, false)},
		{"rare, value", store.IoCFilter{Tag: "rare"}, order(store.IoCOrderValue, false), has("rare"),
			func(a, b keyedRow) int { return cmp.Or(strings.Compare(a.value, b.value), cmp.Compare(a.id, b.id)) }},
		// Every IoC here is a domain: type order goes by id within it.
		{"rare, type desc", store.IoCFilter{Tag: "rare"}, order(store.IoCOrderType, true), has("rare"), keyedOrder(id, true)},
		{"min score 40, value desc", store.IoCFilter{MinScore: ptr(40)}, order(store.IoCOrderValue, true), minScore,
			func(a, b keyedRow) int { return cmp.Or(strings.Compare(b.value, a.value), cmp.Compare(b.id, a.id)) }},
		{"common, id desc", store.IoCFilter{Tag: "common"}, order(store.IoCOrderID, true), has("common"), keyedOrder(id, true)},
		{"common, first seen desc", store.IoCFilter{Tag: "common"}, order(store.IoCOrderFirstSeen, true), has("common"), keyedOrder(first, true)},
		{"search 1.EX", store.IoCFilter{Search: "1.EX"}, store.IoCOrder{}, contains("1.ex"), keyedOrder(id, false)},
		{"search h0, score desc", store.IoCFilter{Search: "h0"}, order(store.IoCOrderScore, true), contains("h0"), keyedOrder(score, true)},
		{"search c2.example", store.IoCFilter{Search: "c2.example"}, store.IoCOrder{}, contains("c2.example"), keyedOrder(id, false)},
		{"search h0, value desc", store.IoCFilter{Search: "h0"}, order(store.IoCOrderValue, true), contains("h0"),
			func(a, b keyedRow) int { return cmp.Or(strings.Compare(b.value, a.value), cmp.Compare(b.id, a.id)) }},
		// LIKE's wildcards are searched for as themselves.
		{"search 1_EX", store.IoCFilter{Search: "1_EX"}, store.IoCOrder{}, contains("1_ex"), keyedOrder(id, false)},
		{"search %.ex", store.IoCFilter{Search: "%.ex"}, store.IoCOrder{}, contains("%.ex"), keyedOrder(id, false)},
		{"prefix h1, expires", store.IoCFilter{ValuePrefix: "h1"}, order(store.IoCOrderExpiresAt, false),
			func(r keyedRow) bool { return strings.HasPrefix(r.value, "h1") }, keyedOrder(expires, false)},
		{"prefix h1, id", store.IoCFilter{ValuePrefix: "h1"}, store.IoCOrder{},
			func(r keyedRow) bool { return strings.HasPrefix(r.value, "h1") }, keyedOrder(id, false)},
		{"prefix h1, id desc", store.IoCFilter{ValuePrefix: "h1"}, order(store.IoCOrderID, true),
			func(r keyedRow) bool { return strings.HasPrefix(r.value, "h1") }, keyedOrder(id, true)},
		{"prefix h, score desc", store.IoCFilter{ValuePrefix: "h"}, order(store.IoCOrderScore, true),
			func(r keyedRow) bool { return strings.HasPrefix(r.value, "h") }, keyedOrder(score, true)},
		{"prefix h1, rare, id desc", store.IoCFilter{ValuePrefix: "h1", Tag: "rare"}, order(store.IoCOrderID, true),
			and(func(r keyedRow) bool { return strings.HasPrefix(r.value, "h1") }, has("rare")), keyedOrder(id, true)},
		{"prefix h, min score 40, last seen desc", store.IoCFilter{ValuePrefix: "h", MinScore: ptr(40)}, order(store.IoCOrderLastSeen, true),
			and(func(r keyedRow) bool { return strings.HasPrefix(r.value, "h") }, minScore), keyedOrder(last, true)},
		{"domains, last seen desc", store.IoCFilter{Types: []ioc.Kind{ioc.Domain}}, order(store.IoCOrderLastSeen, true), nil, keyedOrder(last, true)},
		{"expires before, id", store.IoCFilter{ExpiresBefore: &soon}, store.IoCOrder{}, before, keyedOrder(id, false)},
		{"expires before, expires desc", store.IoCFilter{ExpiresBefore: &soon}, order(store.IoCOrderExpiresAt, true), before, keyedOrder(expires, true)},
		{"expires before, value", store.IoCFilter{ExpiresBefore: &soon}, order(store.IoCOrderValue, false), before,
			func(a, b keyedRow) int { return cmp.Or(strings.Compare(a.value, b.value), cmp.Compare(a.id, b.id)) }},
		{"expires after, id desc", store.IoCFilter{ExpiresAfter: &late}, order(store.IoCOrderID, true), after, keyedOrder(id, true)},
		{"expires after, last seen", store.IoCFilter{ExpiresAfter: &late}, order(store.IoCOrderLastSeen, false), after, keyedOrder(last, false)},
		{"expires after and before, score desc", store.IoCFilter{ExpiresAfter: &soon, ExpiresBefore: &late}, order(store.IoCOrderScore, true),
			func(r keyedRow) bool { return r.expires > soon.UnixMicro() && r.expires < late.UnixMicro() }, keyedOrder(score, true)},
		{"expires after, rare", store.IoCFilter{ExpiresAfter: &soon, Tag: "rare"}, store.IoCOrder{},
			and(has("rare"), func(r keyedRow) bool { return r.expires > soon.UnixMicro() }), keyedOrder(id, false)},
		{"min score 40, score", store.IoCFilter{MinScore: ptr(40)}, order(store.IoCOrderScore, false), minScore, keyedOrder(score, false)},
		{"min score 40, first seen desc", store.IoCFilter{MinScore: ptr(40)}, order(store.IoCOrderFirstSeen, true), minScore, keyedOrder(first, true)},
		{"min score 40, expires before, expires", store.IoCFilter{MinScore: ptr(40), ExpiresBefore: &late}, order(store.IoCOrderExpiresAt, false),
			and(minScore, func(r keyedRow) bool { return r.expires < late.UnixMicro() }), keyedOrder(expires, false)},
	}
	for _, o := range []struct {
		name  string
		field store.IoCOrderField
		col   func(keyedRow) int64
	}{{"score", store.IoCOrderScore, score}, {"first seen", store.IoCOrderFirstSeen, first},
		{"last seen", store.IoCOrderLastSeen, last}, {"expires", store.IoCOrderExpiresAt, expires}} {
		for _, desc := range []bool{false, true} {
			name := o.name
			if desc {
				name += " desc"
			}
			cases = append(cases, keyedCase{name, store.IoCFilter{}, order(o.field, desc), nil, keyedOrder(o.col, desc)})
		}
	}
	return cases
}

// checkKeyedPages walks every keyed page kind in pages of 4 and compares
// it with the rows ordered in Go: as the store reads them, then with every
// filter's keys too many to sort (sparseKeys 1) and a count cap of 3 (the
// pages walk their order's keys).
func checkKeyedPages(t *testing.T, s *store.Store, state string) {
	t.Helper()
	savedSparse, savedCap := *store.SparseKeys, s.IoCCountCap
	defer func() { *store.SparseKeys, s.IoCCountCap = savedSparse, savedCap }()
	for _, dense := range []bool{false, true} {
		if dense {
			*store.SparseKeys, s.IoCCountCap = 1, 3
		}
		checkKeyedPagesNow(t, s, state, dense)
	}
}

func checkKeyedPagesNow(t *testing.T, s *store.Store, state string, dense bool) {
	t.Helper()
	checkKeptKeyRows(t, s, state)
	all := allIoCRows(t, s)
	countCap := store.DefaultIoCCountCap
	if dense {
		state += ", dense"
		countCap = s.IoCCountCap
	}
	for _, c := range keyedCases() {
		var want []string
		for _, r := range slices.SortedFunc(slices.Values(all), c.cmp) {
			if c.keep == nil || c.keep(r) {
				want = append(want, r.value)
			}
		}
		// A prefix past the cap has two ways to its pages (pageOfPrefix),
		// taken at once: each is checked alone as well.
		paces := map[string]prefixWay{"": {true, true, false}}
		if c.filter.ValuePrefix != "" && dense {
			paces[", raced"] = prefixWay{true, true, true}
			paces[", walked"] = prefixWay{true, false, false}
			paces[", ranged"] = prefixWay{false, true, false}
		}
		for pace, ways := range paces {
			restore := takePrefixWay(ways)
			checkKeyedCase(t, s, state+pace, c, want, countCap)
			restore()
		}
		// A find through few keys races a walk of the page's order on
		// SQLite past some keys (pageOfSparse): every find here, raced,
		// each way alone, and the way expected to cost less, chosen
		// alone as when many IoCs changed since the keys.
		if !dense {
			for pace, way := range map[string]struct {
				walk, read bool
				changed    int
			}{", sparse raced": {true, true, 1 << 30}, ", sparse walked": {true, false, 1 << 30},
				", sparse read": {false, true, 1 << 30}, ", sparse chosen": {true, true, -1}} {
				restore := store.SparseWays(way.walk, way.read, 0, way.changed)
				checkKeyedCase(t, s, state+pace, c, want, countCap)
				restore()
			}
			// PostgreSQL's walks, bounded: within a few rows (the read
			// follows most pages), within some, in steps of a quarter of
			// them, and within more than there are.
			for _, bound := range []int{3, 40, 1000} {
				restoreWays, restoreBound := store.SparseWays(true, true, 0, 1<<30), store.SparseWalkBudget(bound)
				checkKeyedCase(t, s, fmt.Sprintf("%s, sparse walk bounded to %d", state, bound), c, want, countCap)
				restoreBound()
				restoreWays()
			}
		}
	}
}

// checkKeyedCase pages through c in pages of 4 and compares the IoCs with
// want (their values), and the totals with want's up to countCap.
func checkKeyedCase(t *testing.T, s *store.Store, state string, c keyedCase, want []string, countCap int) {
	t.Helper()
	wantTotal := len(want)
	if c.filter.Tag != "" || c.filter.Search != "" || c.filter.ValuePrefix != "" || len(c.filter.Types) > 0 ||
		c.filter.MinScore != nil || c.filter.ExpiresBefore != nil || c.filter.ExpiresAfter != nil {
		wantTotal = min(wantTotal, countCap)
	}
	got := pagedValues(t, s, c.filter, c.order, 4, func(page *store.IoCPage) {
		if page.Total != wantTotal || page.TotalCapped != (wantTotal < len(want)) {
			t.Errorf("%s, %s: total %d (capped %v), want %d of %d", state, c.name, page.Total, page.TotalCapped, wantTotal, len(want))
		}
	})
	if !slices.Equal(got, want) {
		t.Errorf("%s, %s:\n got  %q\n want %q", state, c.name, got, want)
	}
}

// ticker returns a function that runs k's next tick, a second after the
// one before.
// catchUpAll takes chunks of maxRows IoCs with catchUp (a store's
// CatchUpKeys, CatchUpOrderKeys or CatchUpValueKeys) until it is caught up.
func catchUpAll(t *testing.T, catchUp func(context.Context, int) (bool, error), maxRows int) {
	t.Helper()
	for caught := false; !caught; {
		var err error
		if caught, err = catchUp(context.Background(), maxRows); err != nil {
			t.Fatal(err)
		}
	}
}

// keyWrites writes batches of new IoCs to a feed, a minute apart, and
// counts what the key tables lag behind them.
type keyWrites struct {
	t      *testing.T
	s      *store.Store
	feed   int64
	prefix string
	n      int
}

func newKeyWrites(t *testing.T, s *store.Store, feed int64, prefix string) *keyWrites {
	return &keyWrites{t: t, s: s, feed: feed, prefix: prefix}
}

// batch writes size new IoCs in one batch.
func (w *keyWrites) batch(size int) {
	w.t.Helper()
	var inds []ioc.Indicator
	for i := range size {
		inds = append(inds, dom(fmt.Sprintf("%s%d-%d.example", w.prefix, w.n, i), "src", 50, "t"))
	}
	apply(w.t, w.s, store.Batch{FeedID: w.feed, Now: t0.Add(time.Duration(w.n) * time.Minute), Retention: 10 * day, Indicators: inds})
	w.n++
}

// ordersBehind counts the IoCs changed since the order and tag keys.
func (w *keyWrites) ordersBehind() int {
	return countRows(w.t, w.s, "iocs WHERE changed_at > (SELECT stamp FROM ioc_keys_state)")
}

// valuesBehind counts the IoCs without a value key.
func (w *keyWrites) valuesBehind() int {
	return countRows(w.t, w.s, "iocs WHERE id > (SELECT value_id FROM ioc_keys_state)")
}

func ticker(t *testing.T, k *store.KeyIndexer) func() {
	now := time.Now()
	return func() {
		t.Helper()
		now = now.Add(time.Second)
		if err := k.Tick(context.Background(), now); err != nil {
			t.Fatal(err)
		}
	}
}

// Whatever deletes IoCs deletes their order keys with them (the sweeper,
// a feed's removal, an allowlist's removal): walks of the orders never
// meet the keys of IoCs that are gone, and the IoCs that stay keep theirs.
func TestDeletedIoCsTakeTheirOrderKeys(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		if s.Dialect == store.Postgres {
			t.Skip("PostgreSQL keeps no order keys: its indexes on iocs serve the orders (TestIoCIndexes)")
		}
		ctx := context.Background()
		short, long, other := newFeed(t, s, "short"), newFeed(t, s, "long"), newFeed(t, s, "other")
		var expiring, staying, going []ioc.Indicator
		for i := range 20 {
			expiring = append(expiring, dom(fmt.Sprintf("e%02d.example", i), "src", i))
			staying = append(staying, dom(fmt.Sprintf("s%02d.example", i), "src", i))
			going = append(going, dom(fmt.Sprintf("g%02d.example", i), "src", i))
		}
		// Two sightings of s00 (one expiring): it stays, recomputed.
		apply(t, s, store.Batch{FeedID: short, Now: t0, Retention: day, Indicators: append(expiring, staying[0])})
		apply(t, s, store.Batch{FeedID: long, Now: t0, Retention: 30 * day, Indicators: staying})
		apply(t, s, store.Batch{FeedID: other, Now: t0, Retention: 30 * day, Indicators: going})
		apply(t, s, store.Batch{FeedID: long, Now: t0, Retention: 30 * day, Indicators: []ioc.Indicator{
			{Kind: ioc.IP, Value: "203.0.113.9", Source: "src", Score: 50}}})
		catchUp := func() {
			catchUpAll(t, s.CatchUpKeys, 1000)
		}
		catchUp()
		gone := func() int {
			return orderKeyCount(t, s, " x WHERE NOT EXISTS (SELECT 1 FROM iocs WHERE iocs.id = x.id)")
		}
		live := func() int {
			return orderKeyCount(t, s, " x WHERE EXISTS (SELECT 1 FROM iocs WHERE iocs.id = x.id)")
		}
		if n := live(); n != 4*61 {
			t.Fatalf("%d order keys of stored IoCs, want 4 × 61", n)
		}

		if _, n, err := s.SweepExpired(ctx, t0.Add(2*day), 0); err != nil || n != 20 {
			t.Fatalf("the sweeper expired %d IoCs, %v; want 20", n, err)
		}
		if n := gone(); n != 0 {
			t.Errorf("%d order keys of swept IoCs left", n)
		}
		checkKeptKeyRows(t, s, "swept")
		if _, err := s.DeleteFeedSightings(ctx, other); err != nil {
			t.Fatal(err)
		}
		if n := gone(); n != 0 {
			t.Errorf("%d order keys of the IoCs of a deleted feed left", n)
		}
		checkKeptKeyRows(t, s, "a feed deleted")
		if n, err := s.DeleteIoCsMatching(ctx, ioc.IP, "", func(v string) bool { return v == "203.0.113.9" }); err != nil || n != 1 {
			t.Fatalf("the allowlist's removal deleted %d IoCs, %v; want 1", n, err)
		}
		if n := gone(); n != 0 {
			t.Errorf("%d order keys of an allowlisted IoC left", n)
		}
		checkKeptKeyRows(t, s, "allowlisted")
		// s00 changed (its short sighting went): its keys are stale, not
		// gone, until the indexer makes them anew; the others hold.
		catchUp()
		if n := live(); n != 4*20 {
			t.Errorf("%d order keys of the 20 IoCs left, want 4 × 20", n)
		}
	})
}

// A type filter that more IoCs match than the count cap pages by id (on
// SQLite without the (type, value) index, see typesDense), with the same
// pages as when few match: every page in order, none repeated or skipped,
// both ways, alone and beside another condition.
func TestDenseTypePages(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		var inds []ioc.Indicator
		for i := range 40 {
			inds = append(inds, dom(fmt.Sprintf("d%02d.example", 40-i), "src", i%3*40))
			if i%4 == 0 {
				inds = append(inds, ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("203.0.113.%d", i), Source: "src", Score: 50})
			}
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 10 * day, Indicators: inds})
		var want []int64
		for _, r := range allIoCRows(t, s) {
			if !strings.Contains(r.value, "203.0.113.") && r.score >= 40 {
				want = append(want, r.id)
			}
		}
		slices.Sort(want)
		for _, cap := range []int{0, 3} { // the default (few match), then dense
			s.IoCCountCap = cap
			for _, desc := range []bool{false, true} {
				exp := slices.Clone(want)
				if desc {
					slices.Reverse(exp)
				}
				min := 40
				got := pagedIDs(t, s, store.IoCFilter{Types: []ioc.Kind{ioc.Domain}, MinScore: &min},
					store.IoCOrder{Field: store.IoCOrderID, Desc: desc}, 7, nil)
				if !slices.Equal(got, exp) {
					t.Errorf("cap %d, desc %v: pages %v, want %v", cap, desc, got, exp)
				}
			}
		}
		s.IoCCountCap = 0
	})
}

// maxPages bounds the pages a test reads through one filter and order: a
// cursor that never comes to the end fails the test rather than hang it.
const maxPages = 1000

// pagedIoCs reads every page of f in order o, size IoCs a page, and
// returns the IoCs in the order the pages gave them; each, unless nil,
// checks every page as it comes.
func pagedIoCs(t *testing.T, s *store.Store, f store.IoCFilter, o store.IoCOrder, size int, each func(*store.IoCPage)) []store.IoC {
	t.Helper()
	var all []store.IoC
	after := ""
	for range maxPages {
		page, err := s.IoCs(context.Background(), f, o, size, after)
		if err != nil {
			t.Fatalf("a page of %+v in %+v: %v", f, o, err)
		}
		if each != nil {
			each(page)
		}
		all = append(all, page.IoCs...)
		if !page.HasNextPage {
			return all
		}
		after = page.EndCursor
	}
	t.Fatalf("%+v in %+v: more than %d pages", f, o, maxPages)
	return nil
}

// pagedIDs is the ids of pagedIoCs' IoCs.
func pagedIDs(t *testing.T, s *store.Store, f store.IoCFilter, o store.IoCOrder, size int, each func(*store.IoCPage)) []int64 {
	t.Helper()
	return eachIoCs(pagedIoCs(t, s, f, o, size, each), func(r store.IoC) int64 { return r.ID })
}

// pagedValues is the values of pagedIoCs' IoCs.
func pagedValues(t *testing.T, s *store.Store, f store.IoCFilter, o store.IoCOrder, size int, each func(*store.IoCPage)) []string {
	t.Helper()
	return eachIoCs(pagedIoCs(t, s, f, o, size, each), func(r store.IoC) string { return r.Value })
}

// eachIoCs is field of each of iocs, in their order.
func eachIoCs[T any](iocs []store.IoC, field func(store.IoC) T) []T {
	out := make([]T, 0, len(iocs))
	for _, r := range iocs {
		out = append(out, field(r))
	}
	return out
}

// While a KeyIndexer keeps the keys, a batch first brings them back within
// KeyLagLimit of the IoCs (payKeyDebt): the order and tag keys within that
// many changes, the value keys within that many new IoCs. Without an
// indexer the batches leave the keys alone.
func TestWritersPayTheKeysDebt(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		const limit, perBatch = 10, 8
		s.KeyLagLimit = limit
		feed := newFeed(t, s, "f")
		n := 0
		batch := func() {
			t.Helper()
			var inds []ioc.Indicator
			for range perBatch {
				inds = append(inds, dom(fmt.Sprintf("d%03d.example", n), "src", 50, "t"))
				n++
			}
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(n) * time.Second), Retention: 10 * day, Indicators: inds})
		}
		lag := func() (changed, unvalued int) {
			t.Helper()
			if err := s.DB.QueryRowContext(context.Background(), `SELECT
	(SELECT count(*) FROM iocs WHERE changed_at > k.stamp), (SELECT count(*) FROM iocs WHERE id > k.value_id)
FROM ioc_keys_state k`).Scan(&changed, &unvalued); err != nil {
				t.Fatal(err)
			}
			return changed, unvalued
		}
		for range 5 {
			batch()
		}
		if changed, unvalued := lag(); changed < 5*perBatch || unvalued < 5*perBatch {
			t.Fatalf("lag %d changes, %d values without an indexer; want the batches to leave the keys alone", changed, unvalued)
		}
		// Kept from the indexer's start, before its first tick.
		(&store.KeyIndexer{Store: s}).Keep()
		for range 6 {
			batch()
			if changed, unvalued := lag(); changed > limit+perBatch || unvalued > limit+perBatch {
				t.Fatalf("after batch %d the keys lag by %d changes and %d values, want at most %d",
					n/perBatch, changed, unvalued, limit+perBatch)
			}
		}
		if k := tagKeys(t, s); k < n-limit-perBatch {
			t.Errorf("%d tag keys for %d IoCs", k, n)
		}
	})
}

// SQLite's batches keep the keys within 20,000 changes by default (its
// pages in the orders of its own keys read every IoC changed since them),
// PostgreSQL's within DefaultKeyLagLimit.
func TestSQLiteBatchesKeepTheKeysCloserByDefault(t *testing.T) {
	s := storetest.NewSQLite(t)
	feed := newFeed(t, s, "f")
	(&store.KeyIndexer{Store: s}).Keep()
	const perBatch = 15_000
	for b := range 3 {
		inds := make([]ioc.Indicator, perBatch)
		for i := range inds {
			inds[i] = dom(fmt.Sprintf("d%d-%d.example", b, i), "src", 50, "t")
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(b) * time.Minute), Retention: 10 * day, Indicators: inds})
	}
	if changed := countRows(t, s, "iocs WHERE changed_at > (SELECT stamp FROM ioc_keys_state)"); changed > 20_000+perBatch {
		t.Errorf("after 45,000 new IoCs the keys lag by %d changes, want at most %d", changed, 20_000+perBatch)
	}
}

// On SQLite a key chunk's transaction keeps its temporary storage
// (statement journals, sorts) in files, and the writing connection goes
// back to memory for the batches after it: in memory, a chunk that made
// the keys of 100,000 stored IoCs anew took the process to 1.2 GB.
func TestKeyChunksKeepTheirTemporaryStorageInFiles(t *testing.T) {
	s := storetest.NewSQLite(t)
	ctx := context.Background()
	const file, memory = 1, 2 // PRAGMA temp_store's values
	var inside int
	if err := store.KeysTx(s, ctx, func(ctx context.Context, tx bun.Tx) error {
		return tx.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&inside)
	}); err != nil {
		t.Fatal(err)
	}
	var after int
	if err := s.DB.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if inside != file || after != memory {
		t.Errorf("temp_store %d in a key chunk and %d after it on the writing connection, want %d and %d", inside, after, file, memory)
	}
}

// The sweeper and a feed's removal delete the tag keys of the IoCs they
// delete, in the same transaction, whether an IoC went with its inline
// sighting or as an orphan of its rows; the keys of the IoCs that stay are
// kept, and none is left for the cleaner. (The keys of tags an IoC had
// lost before it went are: they are found by its tags when it goes.)
func TestDeletersDropTheTagKeysOfWhatTheyDelete(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "a"), newFeed(t, s, "b")
		soon, late := t0.Add(time.Hour), t0.Add(10*day)
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: 20 * day, Indicators: []ioc.Indicator{
			validUntil(dom("inline.example", "s", 10, "t1", "t2"), soon), // one inline sighting: swept with it
			validUntil(dom("rows.example", "s", 10, "t1"), soon),         // rows in a and b: an orphan once both go
			validUntil(dom("kept.example", "s", 10, "t1", "t2"), soon),   // b's row outlives a's
			validUntil(dom("live.example", "s", 10, "t1"), late),         // not expired
			validUntil(dom("later.example", "s", 10, "t3"), late)}})      // removed with feed a below
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: 20 * day, Indicators: []ioc.Indicator{
			validUntil(dom("rows.example", "s", 10, "t1"), soon), validUntil(dom("kept.example", "s", 10, "t1", "t2"), late)}})
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: 20 * day, Indicators: []ioc.Indicator{
			validUntil(dom("only-b.example", "s", 10, "t3"), late)}})
		catchUpAll(t, s.CatchUpKeys, 100)
		staleKeys := func() int {
			return countRows(t, s, "ioc_tag_keys x WHERE NOT EXISTS (SELECT 1 FROM iocs WHERE iocs.id = x.id)")
		}
		before := tagKeys(t, s)
		if _, n, err := s.SweepExpired(ctx, t0.Add(2*time.Hour), 1); err != nil || n != 2 {
			t.Fatalf("the sweep deleted %d IoCs (%v), want inline and rows", n, err)
		}
		// inline's two keys and rows' one; kept's keys stay.
		if got := tagKeys(t, s); staleKeys() != 0 || got != before-3 {
			t.Errorf("after the sweep: %d tag keys of %d, %d of IoCs gone; want %d, none", got, before, staleKeys(), before-3)
		}
		if _, err := s.DeleteFeedSightings(ctx, b); err != nil {
			t.Fatal(err)
		}
		if n := staleKeys(); n != 0 {
			t.Errorf("after feed b's removal: %d tag keys of IoCs gone", n)
		}
		if err := s.DeleteFeed(ctx, a); err != nil {
			t.Fatal(err)
		}
		if n := tagKeys(t, s); n != 0 {
			t.Errorf("no IoCs left, and %d tag keys", n)
		}
	})
}
