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

func changes(t *testing.T, s *store.Store, q store.IoCChangesQuery) []store.IoCChange {
	t.Helper()
	var out []store.IoCChange
	err := s.IoCChanges(context.Background(), q, func(c *store.IoCChange) error {
		cp := *c
		cp.Tags = append([]string(nil), c.Tags...)
		out = append(out, cp)
		return nil
	})
	if err != nil {
		t.Fatalf("IoCChanges: %v", err)
	}
	return out
}

func TestIoCChangesFollowWrites(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		now := time.Now().UTC()
		apply(t, s, store.Batch{FeedID: feed, Retention: 30 * day, Now: now,
			Indicators: []ioc.Indicator{dom("a.example", "", 10), dom("b.example", "", 10)}})
		apply(t, s, store.Batch{FeedID: feed, Retention: 30 * day, Now: now,
			Indicators: []ioc.Indicator{dom("c.example", "", 10), {Kind: ioc.IP, Value: "192.0.2.1", Score: 5}}})
		all := changes(t, s, store.IoCChangesQuery{})
		if len(all) != 4 {
			t.Fatalf("got %d changes, want 4", len(all))
		}
		for i := 1; i < len(all); i++ {
			if all[i].Key.At < all[i-1].Key.At || (all[i].Key.At == all[i-1].Key.At && all[i].Key.ID <= all[i-1].Key.ID) {
				t.Fatalf("not in change order: %+v then %+v", all[i-1].Key, all[i].Key)
			}
		}
		if all[0].Key.At == all[2].Key.At {
			t.Errorf("two transactions share the stamp %d", all[0].Key.At)
		}
		// An update moves the IoC to the end, with a new stamp.
		apply(t, s, store.Batch{FeedID: feed, Retention: 30 * day, Now: now, Indicators: []ioc.Indicator{dom("a.example", "", 90)}})
		after := changes(t, s, store.IoCChangesQuery{After: all[3].Key})
		if len(after) != 1 || after[0].Value != "a.example" || after[0].Score != 90 {
			t.Fatalf("after the last key: %+v, want a.example with score 90", after)
		}
		// Kinds and limit.
		ips := changes(t, s, store.IoCChangesQuery{Kinds: []ioc.Kind{ioc.IP}})
		if len(ips) != 1 || ips[0].Value != "192.0.2.1" {
			t.Errorf("IP changes: %+v", ips)
		}
		if got := changes(t, s, store.IoCChangesQuery{Limit: 2}); len(got) != 2 || got[0].Value != "b.example" {
			t.Errorf("first two changes: %+v", got)
		}
	})
}

// A clock that went backwards (another instance's, or this one's) does not
// stamp a change below one a reader may have seen.
func TestIoCChangeStampsNeverGoBack(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		future := time.Now().Add(time.Hour).UnixMicro()
		storetest.MustExec(t, s, "UPDATE ioc_stats SET stamp = ?", future)
		apply(t, s, store.Batch{FeedID: feed, Retention: 30 * day, Now: time.Now(), Indicators: []ioc.Indicator{dom("a.example", "", 10)}})
		apply(t, s, store.Batch{FeedID: feed, Retention: 30 * day, Now: time.Now(), Indicators: []ioc.Indicator{dom("b.example", "", 10)}})
		got := changes(t, s, store.IoCChangesQuery{})
		if len(got) != 2 || got[0].Key.At != future+1 || got[1].Key.At != future+2 {
			t.Fatalf("stamps after a clock an hour ahead: %+v, want %d then %d", got, future+1, future+2)
		}
	})
}

// The sweeper's recomputation of an IoC that keeps a live sighting is a
// change too.
func TestIoCChangesSeeExpiry(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		a, b := newFeed(t, s, "a"), newFeed(t, s, "b")
		now := time.Now().UTC()
		apply(t, s, store.Batch{FeedID: a, Retention: time.Hour, Now: now, Indicators: []ioc.Indicator{dom("x.example", "", 90)}})
		apply(t, s, store.Batch{FeedID: b, Retention: 30 * day, Now: now, Indicators: []ioc.Indicator{dom("x.example", "", 10)}})
		before := changes(t, s, store.IoCChangesQuery{})
		if _, _, err := s.SweepExpired(context.Background(), now.Add(2*time.Hour), 0); err != nil {
			t.Fatal(err)
		}
		got := changes(t, s, store.IoCChangesQuery{After: before[0].Key})
		if len(got) != 1 || got[0].Score != 10 {
			t.Fatalf("after the sweep: %+v, want x.example re-stamped with score 10", got)
		}
	})
}

// Every IoC row a write touches takes a stamp of its own, whichever writer
// touched it: new IoCs, updated ones, and the sweeper's recomputation of
// IoCs that keep another feed's sighting. TAXII's added_after pages by the
// stamp alone.
func TestIoCChangeStampsAreDistinct(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		short, long := newFeed(t, s, "short"), newFeed(t, s, "long")
		batch := func(feed int64, from, to int, now time.Time, retention time.Duration) {
			var inds []ioc.Indicator
			for i := from; i < to; i++ {
				inds = append(inds, dom(fmt.Sprintf("d%d.example", i), "src", 10+i%50))
			}
			apply(t, s, store.Batch{FeedID: feed, Now: now, Retention: retention, Indicators: inds})
		}
		distinct := func(when string) {
			t.Helper()
			var rows, stamps int
			if err := s.DB.QueryRowContext(context.Background(),
				"SELECT count(*), count(DISTINCT changed_at) FROM iocs").Scan(&rows, &stamps); err != nil {
				t.Fatal(err)
			}
			if rows == 0 || stamps != rows {
				t.Fatalf("%s: %d IoCs with %d distinct stamps", when, rows, stamps)
			}
		}
		now := time.Now()
		batch(short, 0, 600, now.Add(-48*time.Hour), 24*time.Hour) // expired by now
		distinct("new IoCs")
		batch(long, 300, 900, now, 30*day) // 300 updated, 300 new
		distinct("updated IoCs")
		if _, _, err := s.SweepExpired(context.Background(), now, 100); err != nil {
			t.Fatal(err)
		}
		distinct("after the sweep")
		var left int
		if err := s.DB.QueryRowContext(context.Background(), "SELECT count(*) FROM iocs").Scan(&left); err != nil || left != 600 {
			t.Fatalf("%d IoCs after the sweep (%v), want 600", left, err)
		}
	})
}
