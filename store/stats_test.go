package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// Every kind of change of iocs moves ioc_stats' version, and its count stays
// the table's: ingestion, revocation, expiry and feed deletion; a count made
// wrong by hand is healed by the next sweep.
func TestIoCStatsFollowEveryChange(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		last := int64(0)
		check := func(step string, moved bool) {
			t.Helper()
			st, err := s.IoCStats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if moved && st.Version <= last || !moved && st.Version != last {
				t.Errorf("%s: version %d after %d, want moved=%v", step, st.Version, last, moved)
			}
			last = st.Version
			var n int64
			if err := s.DB.NewRaw("SELECT count(*) FROM iocs").Scan(ctx, &n); err != nil {
				t.Fatal(err)
			}
			if st.Count != n {
				t.Errorf("%s: ioc_stats count %d, table holds %d", step, st.Count, n)
			}
			page, err := s.IoCs(ctx, store.IoCFilter{}, store.IoCOrder{}, 1, "")
			if err != nil || page.Total != int(n) {
				t.Errorf("%s: unfiltered total %v (%v), want %d", step, page, err, n)
			}
			if moved && st.ChangedAt.IsZero() {
				t.Errorf("%s: no time of change", step)
			}
		}
		if st, err := s.IoCStats(ctx); err != nil || st.Count != 0 {
			t.Fatalf("empty database: %+v, %v", st, err)
		} else {
			last = st.Version
		}
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 80), dom("y.example", "s1", 10), dom("z.example", "s1", 10)}})
		check("first ingestion", true)
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: 40 * day, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 20), dom("w.example", "s1", 20)}})
		check("second feed", true)
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{dom("y.example", "s1", 30)}})
		check("new score", true)
		ry := dom("y.example", "s1", 0)
		ry.Revoked = true
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(2 * time.Hour), Retention: day, Indicators: []ioc.Indicator{ry}})
		check("revocation", true)
		if _, _, err := s.SweepExpired(ctx, t0.Add(20*day), 0); err != nil {
			t.Fatal(err)
		}
		check("expiry", true)
		if _, _, err := s.SweepExpired(ctx, t0.Add(20*day), 0); err != nil {
			t.Fatal(err)
		}
		check("sweep with nothing expired", false)
		if _, err := s.DeleteFeedSightings(ctx, b); err != nil {
			t.Fatal(err)
		}
		check("feed deletion", true)
		// A count gone wrong (a write outside the store's writers) heals
		// at the sweeper's next pass.
		if _, err := s.DB.ExecContext(ctx, "UPDATE ioc_stats SET ioc_count = ioc_count + 7 WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.SweepExpired(ctx, t0.Add(20*day), 0); err != nil {
			t.Fatal(err)
		}
		check("a sweep after the count went wrong", false)
	})
}

// On PostgreSQL the tables never analysed are analysed: their row count is
// known to the planner after. SQLite has nothing to analyse.
func TestRefreshStatisticsAnalysesStaleTables(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		var inds []ioc.Indicator
		for i := range 50 {
			inds = append(inds, dom(fmt.Sprintf("d%d.example", i), "src", 10))
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: inds})
		analysed, err := s.RefreshStatistics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Dialect == store.SQLite {
			if analysed != nil {
				t.Errorf("SQLite analysed %q", analysed)
			}
			return
		}
		if !slices.Contains(analysed, "iocs") {
			t.Fatalf("analysed %q, want iocs among them", analysed)
		}
		var rows float64
		if err := s.DB.NewRaw("SELECT reltuples FROM pg_class WHERE relname = 'iocs'").Scan(ctx, &rows); err != nil || rows != 50 {
			t.Errorf("iocs' planned rows after the analysis: %v, %v; want 50", rows, err)
		}
	})
}
