package store_test

import (
	"context"
	"testing"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestExpireUnseen: after a snapshot run that started at t1, the feed's
// sightings of that list not re-seen since go, with the IoCs left without
// one; a re-seen value stays with its last_seen moved; other lists, other
// feeds and the aggregates of shared IoCs are kept right.
func TestExpireUnseen(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		t1 := t0.Add(day)
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: 30 * day, Indicators: []ioc.Indicator{
			dom("kept.example.com", "list", 80), dom("dropped.example.com", "list", 80),
			dom("shared.example.com", "list", 90, "mine"), dom("other-list.example.com", "other", 80)}})
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: 30 * day, Indicators: []ioc.Indicator{
			dom("shared.example.com", "list", 40, "theirs")}})
		// The second run, started at t1, hands over only kept.example.com.
		apply(t, s, store.Batch{FeedID: a, Now: t1, Retention: 30 * day, Indicators: []ioc.Indicator{
			dom("kept.example.com", "list", 80)}})

		n, err := s.ExpireUnseen(ctx, a, "list", t1)
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("removed %d sightings, want 2 (dropped, shared)", n)
		}
		if iocExists(t, s, ioc.Domain, "dropped.example.com") {
			t.Error("a value dropped from the list is still live")
		}
		wantIoC(t, s, "kept.example.com", 80, nil, t0, t1, t1.Add(30*day))
		wantIoC(t, s, "shared.example.com", 40, []string{"theirs"}, t0, t0, t0.Add(30*day))
		if !iocExists(t, s, ioc.Domain, "other-list.example.com") {
			t.Error("a value of another list of the feed expired")
		}
		if n, err := s.ExpireUnseen(ctx, a, "list", t1); err != nil || n != 0 {
			t.Errorf("second expiry: %d, %v; want nothing", n, err)
		}
	})
}
