package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// The overview counts what the store holds and what the runs and the
// sweeper did, per day, on both databases.
func TestOverviewCountsIoCsRunsAndExpiry(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		runA, err := s.StartRun(ctx, a, t0.Add(-2*day))
		if err != nil {
			t.Fatal(err)
		}
		shortLived := dom("gone.example", "s1", 50)
		shortLived.ValidUntil = t0.Add(-day)
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(-2 * day), Retention: 10 * day, RunID: runA.ID, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 80, "emotet", "botnet"), dom("y.example", "s1", 10, "emotet"), shortLived,
			{Kind: ioc.IP, Value: "192.0.2.1", Source: "s1", Score: 60, Tags: []string{"scanner"}}}})
		runB, err := s.StartRun(ctx, b, t0.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		apply(t, s, store.Batch{FeedID: b, Now: t0.Add(-time.Hour), Retention: 3 * day, RunID: runB.ID, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 20, "emotet"), dom("w.example", "s1", 20)}})
		// gone.example expired a day ago; the sweep at t0 removes it.
		if _, n, err := s.SweepExpired(ctx, t0, 0); err != nil || n != 1 {
			t.Fatalf("sweep removed %d IoCs (%v), want 1", n, err)
		}

		o, err := s.ComputeOverview(ctx, t0)
		if err != nil {
			t.Fatal(err)
		}
		if o.Total != 4 {
			t.Errorf("total %d, want 4", o.Total)
		}
		wantTypes := []store.TypeCount{{Type: "domain", Count: 3}, {Type: "ip", Count: 1}}
		if len(o.ByType) != 2 || o.ByType[0] != wantTypes[0] || o.ByType[1] != wantTypes[1] {
			t.Errorf("by type %+v, want %+v", o.ByType, wantTypes)
		}
		wantFeeds := []store.FeedCount{{FeedID: a, Count: 3}, {FeedID: b, Count: 2}}
		if len(o.ByFeed) != 2 || o.ByFeed[0] != wantFeeds[0] || o.ByFeed[1] != wantFeeds[1] {
			t.Errorf("by feed %+v, want %+v", o.ByFeed, wantFeeds)
		}
		wantTags := []store.TagCount{{Tag: "emotet", Count: 2}, {Tag: "botnet", Count: 1}, {Tag: "scanner", Count: 1}}
		if len(o.TopTags) != 3 || o.TopTags[0] != wantTags[0] || o.TopTags[1] != wantTags[1] || o.TopTags[2] != wantTags[2] {
			t.Errorf("top tags %+v, want %+v", o.TopTags, wantTags)
		}

		if len(o.Days) != store.OverviewDays {
			t.Fatalf("%d days, want %d", len(o.Days), store.OverviewDays)
		}
		today := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		if last := o.Days[store.OverviewDays-1]; !last.Day.Equal(today) || last.Added != 2 || last.Expired != 1 {
			t.Errorf("today %+v, want 2 added (feed b's run) and 1 expired", last)
		}
		if d := o.Days[store.OverviewDays-3]; !d.Day.Equal(today.AddDate(0, 0, -2)) || d.Added != 4 || d.Expired != 0 {
			t.Errorf("two days ago %+v, want 4 added (feed a's run)", d)
		}
		var added, expired int64
		for _, d := range o.Days {
			added, expired = added+d.Added, expired+d.Expired
		}
		if added != 6 || expired != 1 {
			t.Errorf("30 days: %d added and %d expired, want 6 and 1", added, expired)
		}

		// b's sightings expire at t0-1h+3 days (day 3 from today); a's after
		// the 7 days looked at. x.example expires with its latest sighting (a's).
		if len(o.Expiring) != store.OverviewExpiringDays {
			t.Fatalf("%d expiring days, want %d", len(o.Expiring), store.OverviewExpiringDays)
		}
		for i, d := range o.Expiring {
			want := int64(0)
			if i == 3 {
				want = 1 // w.example
			}
			if !d.Day.Equal(today.AddDate(0, 0, i)) || d.Expiring != want {
				t.Errorf("expiring on day %d: %+v, want %d", i, d, want)
			}
		}

		// A second sweep the same day adds to the day's figure.
		apply(t, s, store.Batch{FeedID: b, Now: t0.Add(-2 * day), Retention: 0, Indicators: []ioc.Indicator{
			{Kind: ioc.IP, Value: "192.0.2.9", Source: "s1", Score: 1, ValidUntil: t0.Add(-time.Minute)}}})
		if _, n, err := s.SweepExpired(ctx, t0.Add(time.Hour), 0); err != nil || n != 1 {
			t.Fatalf("second sweep removed %d IoCs (%v), want 1", n, err)
		}
		if o, err = s.ComputeOverview(ctx, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		} else if got := o.Days[store.OverviewDays-1].Expired; got != 2 {
			t.Errorf("today's expired after two sweeps: %d, want 2", got)
		}
	})
}

// Overview answers from its cache while the IoCs do not change, reads the
// counts again after any change, and computes again on a new day.
func TestOverviewCacheFollowsIoCStats(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a := newFeed(t, s, "TSV_a")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: 10 * day, Indicators: []ioc.Indicator{dom("x.example", "s1", 80)}})
		first, err := s.Overview(ctx, t0)
		if err != nil || first.Total != 1 {
			t.Fatalf("overview %+v, %v", first, err)
		}
		if again, err := s.Overview(ctx, t0.Add(time.Hour)); err != nil || again != first {
			t.Errorf("nothing changed but the overview was computed again (%v)", err)
		}
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: 10 * day, Indicators: []ioc.Indicator{dom("y.example", "s1", 80)}})
		fresh, err := s.Overview(ctx, t0.Add(time.Hour))
		if err != nil || fresh == first || fresh.Total != 2 {
			t.Errorf("after a change: %+v (%v), want a new overview of 2 IoCs", fresh, err)
		}
		tomorrow, err := s.Overview(ctx, t0.Add(day))
		if err != nil || tomorrow == fresh || !tomorrow.Days[store.OverviewDays-1].Day.Equal(time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("a new day kept the old series (%v)", err)
		}
	})
}

// The overview reads beside a write transaction, as every read does: its
// snapshot transaction must not take SQLite's write lock (it did, and
// waited for a key indexer's chunk).
func TestOverviewReadsBesideAWriter(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		tx, err := s.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "UPDATE ioc_stats SET version = version WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if _, err := s.ComputeOverview(ctx, time.Now()); err != nil {
			t.Fatalf("the overview while a writer holds the store: %v", err)
		}
	})
}
