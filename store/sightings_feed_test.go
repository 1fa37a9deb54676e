package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// Neither database has a foreign key from sightings to feeds: what keeps
// every sighting's feed in place is that a batch checks its feed under the
// write lock before it commits, and that a feed's sightings go before it.
func TestNoSightingOutlivesItsFeed(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		kept, gone := newFeed(t, s, "TSV_kept"), newFeed(t, s, "TSV_gone")
		apply(t, s, store.Batch{FeedID: gone, Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("shared.example", "s", 10), dom("gone-only.example", "s", 10)}})
		apply(t, s, store.Batch{FeedID: kept, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("shared.example", "s", 20)}})
		if err := s.DeleteFeed(ctx, gone); err != nil {
			t.Fatal(err)
		}
		// A run of the deleted feed still going on elsewhere.
		_, err := s.ApplyBatch(ctx, store.Batch{FeedID: gone, Now: t0.Add(day), Retention: day, Indicators: []ioc.Indicator{
			dom("late.example", "s", 10), dom("shared.example", "s", 90)}})
		if !errors.Is(err, store.ErrFeedDisabled) {
			t.Errorf("batch of a deleted feed: %v, want ErrFeedDisabled", err)
		}
		var orphans int
		if err := s.DB.NewRaw(`SELECT count(*) FROM sightings WHERE feed_id NOT IN (SELECT id FROM feeds)`).Scan(ctx, &orphans); err != nil {
			t.Fatal(err)
		}
		if orphans != 0 {
			t.Errorf("%d sightings of a deleted feed", orphans)
		}
		if n := count(t, s, "sightings"); n != 1 {
			t.Errorf("sightings = %d, want 1 (the kept feed's)", n)
		}
		if iocExists(t, s, ioc.Domain, "late.example") || iocExists(t, s, ioc.Domain, "gone-only.example") {
			t.Error("an IoC of the deleted feed only is stored")
		}
		wantIoC(t, s, "shared.example", 20, nil, t0, t0, t0.Add(day))
	})
}
