package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// A search finds the IoCs after the value keys exactly as the database's
// own case-insensitive match of every value does, whatever the searches'
// tail holds of them (PostgreSQL): values in either case and with
// characters outside ASCII, IoCs gone since the tail read them, IoCs
// after it, and the value keys moving past part of it.
func TestSearchFollowsTheValuesAfterTheKeys(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed, gone := newFeed(t, s, "f"), newFeed(t, s, "gone")
		url := func(v string) ioc.Indicator {
			return ioc.Indicator{Kind: ioc.URL, Value: v, Source: "src", Score: 50}
		}
		batch := func(feedID int64, n int, values ...string) {
			var inds []ioc.Indicator
			for _, v := range values {
				inds = append(inds, url(v))
			}
			apply(t, s, store.Batch{FeedID: feedID, Now: t0.Add(time.Duration(n) * time.Minute), Retention: 10 * day, Indicators: inds})
		}
		batch(feed, 0, "http://keyed.example/Ost-4242", "http://keyed.example/other")
		catchUpAll(t, s.CatchUpKeys, 1000)
		searches := []string{"ost-4242", "OST-4242", "ÉTÉ-4242", "été", "x/Ost", "4242", "zzz-none", "%-4", "ost_4242", "kelvin"}
		check := func(when string) {
			t.Helper()
			for _, search := range searches {
				var want int
				if err := s.DB.NewRaw("SELECT count(*) FROM iocs WHERE value "+map[bool]string{true: "ILIKE", false: "LIKE"}[s.Dialect == store.Postgres]+" ? ESCAPE '\\'",
					"%"+likeEscaper.Replace(search)+"%").Scan(ctx, &want); err != nil {
					t.Fatal(err)
				}
				page, err := s.IoCs(ctx, store.IoCFilter{Search: search}, store.IoCOrder{}, 100, "")
				if err != nil {
					t.Fatalf("%s: search %q: %v", when, search, err)
				}
				if page.Total != want || len(page.IoCs) != want {
					t.Errorf("%s: search %q found %d (total %d), the database's own match %d", when, search, len(page.IoCs), page.Total, want)
				}
			}
		}
		fill := func() {
			t.Helper()
			if err := s.FillValueTail(ctx); err != nil {
				t.Fatal(err)
			}
		}
		check("keys caught up")
		batch(feed, 1, "http://a.example/OST-4242", "http://b.example/ost-4242x", "http://c.example/ÉTÉ-4242", "http://d.example/plain",
			// The Kelvin sign, which PostgreSQL folds to an ASCII "k".
			"http://h.example/\u212Aelvin-4242")
		batch(gone, 2, "http://gone.example/ost-4242", "http://gone.example/été")
		check("new IoCs, the tail filling")
		fill()
		if s.Dialect == store.Postgres {
			if _, _, n := s.ValueTailSpan(); n != 7 {
				t.Fatalf("the tail holds %d IoCs after a fill, want the 7 after the value keys", n)
			}
		}
		check("the tail filled")
		// After the tail: read from iocs until the next fill.
		batch(feed, 3, "http://e.example/Ost-4242/été", "http://f.example/x/ost")
		check("new IoCs after the tail")
		// Gone since the tail read them.
		if _, err := s.DeleteFeedSightings(ctx, gone); err != nil {
			t.Fatal(err)
		}
		check("IoCs gone from the tail")
		fill()
		// The value keys past part of the tail.
		if _, err := s.CatchUpValueKeys(ctx, 2); err != nil {
			t.Fatal(err)
		}
		check("value keys part way through the tail")
		if s.Dialect == store.Postgres {
			lo, hi, n := s.ValueTailSpan()
			if lo == 0 || hi <= lo || n == 0 {
				t.Fatalf("the tail answers (%d, %d] with %d IoCs: the searches above did not use it", lo, hi, n)
			}
		}
		catchUpAll(t, s.CatchUpKeys, 1000)
		check("value keys caught up")
		for i := range 30 {
			batch(feed, 4+i, fmt.Sprintf("http://g%d.example/OsT-4242", i))
		}
		fill()
		check("many small batches")
	})
}

// likeEscaper escapes LIKE's wildcards and its escape character.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
