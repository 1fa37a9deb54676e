package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// A page of an expiry range in value order walks each kind's values only
// between the values its zones hold (SQLite's ioc_zone_values): its pages,
// both ways, are the matching IoCs by (value, id) whether the range's
// values lie past, before or among the others', with other conditions or
// kinds no zone of the range holds, through re-sightings, a sweep, the
// cleaner and the migration.
func TestValuePagesOfAnExpiryRangeWalkTheirZonesValues(t *testing.T) {
	withExpiryZones(t, 4)
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "values")
		batch := func(at time.Time, retention time.Duration, format string, kinds ...ioc.Kind) {
			t.Helper()
			var inds []ioc.Indicator
			for i := range 6 {
				var tags []string
				if i%3 == 0 {
					tags = []string{"third"}
				}
				for _, k := range kinds {
					v := fmt.Sprintf(format, i)
					switch k {
					case ioc.IP:
						v = fmt.Sprintf("%d.0.0.%d", len(format)*7, i)
					case ioc.MD5:
						v = fmt.Sprintf("%02x%030x", len(format)*9, i)
					case ioc.URL:
						v = "http://" + v + "/x"
					}
					inds = append(inds, ioc.Indicator{Kind: k, Value: v, Source: "src", Score: 10 * i, Tags: tags})
				}
			}
			apply(t, s, store.Batch{FeedID: feed, Now: at, Retention: retention, Indicators: inds})
		}
		// Long-lived values before, after and among the short-lived ones of
		// each kind; URLs only long-lived.
		batch(t0, 10*day, "d%02d.example", ioc.Domain, ioc.IP, ioc.MD5, ioc.URL)
		batch(t0, time.Hour, "z%02d.example", ioc.Domain, ioc.IP, ioc.MD5)
		batch(t0, 2*time.Hour, "m%02d.example.org", ioc.Domain, ioc.MD5)
		batch(t0, 10*day, "zz%02d.example", ioc.Domain, ioc.IP)
		batch(t0, 10*day, "a%02d.example.net", ioc.Domain, ioc.MD5, ioc.URL)

		at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
		filters := []struct {
			name string
			f    store.IoCFilter
		}{
			{"expires before +1d", store.IoCFilter{ExpiresBefore: at(day)}},
			{"expires before +1d, IPs", store.IoCFilter{ExpiresBefore: at(day), Types: []ioc.Kind{ioc.IP}}},
			{"expires before +1d, URLs", store.IoCFilter{ExpiresBefore: at(day), Types: []ioc.Kind{ioc.URL}}},
			{"expires before +1d, tag", store.IoCFilter{ExpiresBefore: at(day), Tag: "third"}},
			{"expires before +1d, min score 30", store.IoCFilter{ExpiresBefore: at(day), MinScore: ptr(30)}},
			{"expires after +90m, before +1d", store.IoCFilter{ExpiresAfter: at(90 * time.Minute), ExpiresBefore: at(day)}},
			{"expires on +1h's microsecond", store.IoCFilter{ExpiresAfter: at(time.Hour - time.Microsecond), ExpiresBefore: at(time.Hour + time.Microsecond)}},
			{"expires after +2d", store.IoCFilter{ExpiresAfter: at(2 * day)}},
			{"expires after +2d, URLs", store.IoCFilter{ExpiresAfter: at(2 * day), Types: []ioc.Kind{ioc.URL}}},
		}
		sent := recordStatements(s)
		keyed := false
		check := func(state string) {
			t.Helper()
			checkZoneSpans(t, s, state)
			all := storedRows(t, s)
			eachPageSetting(s, func(sparse, countCap int) {
				for _, c := range filters {
					for _, desc := range []bool{false, true} {
						want := idsByValue(t, all, c.f, desc)
						sent()
						for _, size := range []int{2, 3} {
							got := pagedIDs(t, s, c.f, store.IoCOrder{Field: store.IoCOrderValue, Desc: desc}, size, nil)
							if !slices.Equal(got, want) {
								t.Errorf("%s, %s, desc %v, sparse %d, cap %d, pages of %d:\n got %v\nwant %v",
									state, c.name, desc, sparse, countCap, size, got, want)
							}
						}
						// Matches, few keys read, the keys caught up:
						// the walk of each kind's values, within the
						// zones' values on SQLite.
						if !keyed || sparse != 1 || countCap != 3 || s.Dialect != store.SQLite || len(want) == 0 {
							continue
						}
						if !slices.ContainsFunc(sent(), func(q string) bool { return strings.Contains(q, "ioc_zone_values") }) {
							t.Errorf("%s, %s, desc %v: the pages did not read the zones' values", state, c.name, desc)
						}
					}
				}
			})
		}
		check("before the keys")
		catchUpAll(t, s.CatchUpKeys, 1000)
		keyed = true
		check("keys caught up")
		// Re-sighted for ten days, two short-lived domains leave the range
		// (their zones' values stay as they were).
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Minute), Retention: 10 * day,
			Indicators: []ioc.Indicator{dom("z01.example", "src", 10), dom("m04.example.org", "src", 40)}})
		check("re-sighted")
		if _, n, err := s.SweepExpired(ctx, t0.Add(90*time.Minute), 0); err != nil || n != 17 {
			t.Fatalf("swept %d IoCs (%v), want the 17 of an hour", n, err)
		}
		check("an hour's swept")
		if s.Dialect == store.SQLite {
			if n := countRows(t, s, "ioc_zone_values WHERE zone NOT IN (SELECT zone FROM ioc_expiry_zones)"); n != 0 {
				t.Errorf("%d zones' values left of zones the sweep emptied", n)
			}
		}
		pos := store.KeyPositions{}
		for range 20 {
			var err error
			if pos, err = s.CleanKeys(ctx, pos, 4); err != nil {
				t.Fatal(err)
			}
		}
		check("cleaned")
		if !zoneValuesExact(t, s) {
			t.Error("zones' values not exact after the cleaner's pass")
		}
		migrateZonesAgain(t, s)
		if n := countRows(t, s, "ioc_expiry_zones"); n != 1 || !zoneValuesExact(t, s) {
			t.Errorf("%d zones after the migrations, want 1, values exact: %v", n, zoneValuesExact(t, s))
		}
		check("migrated")
	})
}
