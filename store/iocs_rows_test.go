package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestApplyBatchSharedAndVaryingColumns covers both ways the SQLite writer
// passes a column: written once into the statement when every row of the
// batch has the same value (here tags with a quote, which must survive
// SQL quoting), bound per row when rows differ.
func TestApplyBatchSharedAndVaryingColumns(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "rows")
		quoted := []string{`it's "x"`}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 30 * day, Indicators: []ioc.Indicator{
			dom("a.example.com", "s1", 10, quoted...),
			dom("b.example.com", "s1", 20, quoted...),
		}})
		wantIoC(t, s, "a.example.com", 10, quoted, t0, t0, t0.Add(30*day))
		wantIoC(t, s, "b.example.com", 20, quoted, t0, t0, t0.Add(30*day))

		until := t0.Add(3 * day)
		mixed := dom("d.example.com", "s2", 40, "t2")
		mixed.ValidUntil = until
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 30 * day, Indicators: []ioc.Indicator{
			dom("c.example.com", "s2", 30, "t1"),
			mixed,
		}})
		wantIoC(t, s, "c.example.com", 30, []string{"t1"}, t0, t0, t0.Add(30*day))
		wantIoC(t, s, "d.example.com", 40, []string{"t2"}, t0, t0, until)
		sights, err := s.Sightings(context.Background(), getIoC(t, s, ioc.Domain, "d.example.com").ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(sights) != 1 || sights[0].FeedID != feed || sights[0].Source != "s2" || !slices.Equal(sights[0].Tags, []string{"t2"}) ||
			!sights[0].ExpiresAt.Equal(until) || !sights[0].FirstSeen.Equal(t0) {
			t.Errorf("sightings of d.example.com = %+v", sights)
		}
	})
}
