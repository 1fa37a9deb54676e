package store_test

import (
	"context"
	"fmt"
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

// TestApplyBatchIDsOfNewIoCs: the SQLite writer inserts IoCs in multi-row
// statements and works their ids out without reading them back when every
// row went in. Each sighting must land on its own IoC: a batch of several
// statements where every row is new, after the last IoC was deleted (ids
// are never reused), and one where every third value is stored already.
func TestApplyBatchIDsOfNewIoCs(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "ids")
		value := func(i int) string { return fmt.Sprintf("v%04d.example.com", i) }
		batch := func(from, to, step int) []ioc.Indicator {
			var out []ioc.Indicator
			for i := from; i < to; i += step {
				out = append(out, dom(value(i), fmt.Sprintf("src%d", i), i%101))
			}
			return out
		}
		check := func(step string, to, stride int) {
			t.Helper()
			ids := map[int64]bool{}
			for i := 0; i < to; i += stride {
				got := getIoC(t, s, ioc.Domain, value(i))
				sights, err := s.Sightings(ctx, got.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Score != i%101 || len(sights) != 1 || sights[0].Source != fmt.Sprintf("src%d", i) || ids[got.ID] {
					t.Fatalf("%s: %s = %+v with sightings %+v", step, value(i), got, sights)
				}
				ids[got.ID] = true
			}
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("gone.example.com", "s", 1)}})
		gone := getIoC(t, s, ioc.Domain, "gone.example.com").ID
		if _, err := s.DB.NewDelete().Table("sighting_rows").Where("ioc_id = ?", gone).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DB.NewDelete().Table("iocs").Where("id = ?", gone).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: batch(0, 900, 3)})
		check("all new", 900, 3)
		if first := getIoC(t, s, ioc.Domain, value(0)).ID; first <= gone {
			t.Errorf("a new IoC got id %d, not above the deleted %d", first, gone)
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: batch(0, 900, 1)})
		check("every third stored", 900, 1)
		if n := count(t, s, "iocs"); n != 900 {
			t.Errorf("%d IoCs, want 900", n)
		}
	})
}
