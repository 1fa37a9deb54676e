package store_test

import (
	"context"
	"testing"

	"github.com/tifeeds/tifeeds/internal/background"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestBackgroundWritesRunAtALowerPriority: a batch, the key indexer's
// tick, a snapshot's expiry of what it no longer lists, the sweeper and a
// feed's removal each run on a thread at the background's priority.
func TestBackgroundWritesRunAtALowerPriority(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		own, err := background.ThreadNice(0)
		if err != nil {
			t.Fatal(err)
		}
		want := min(own+background.Nice, 19)
		threads, restore := background.Record()
		defer restore()
		seen := 0
		lowered := func(what string, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			all := threads()
			if len(all) == seen {
				t.Errorf("%s ran on no thread of lower priority", what)
			}
			for _, th := range all[seen:] {
				if th.Nice != want {
					t.Errorf("%s ran on thread %d at nice %d, want %d", what, th.ID, th.Nice, want)
				}
			}
			seen = len(all)
		}
		feed := newFeed(t, s, "TSV_background")
		_, err = s.ApplyBatch(ctx, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("a.example.com", "list", 80), dom("b.example.com", "list", 80)}})
		lowered("a batch", err)
		lowered("the key indexer's tick", (&store.KeyIndexer{Store: s}).Tick(ctx, t0))
		_, err = s.ExpireUnseen(ctx, feed, "list", t0)
		lowered("ExpireUnseen", err)
		_, _, err = s.SweepExpired(ctx, t0.Add(2*day), 0)
		lowered("the sweeper", err)
		_, err = s.DeleteFeedSightings(ctx, feed)
		lowered("a feed's removal", err)
	})
}
