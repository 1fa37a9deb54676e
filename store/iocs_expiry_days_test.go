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

// On PostgreSQL a page of an expiry range in value order merges the
// range's days of expiries, each read in value order (pageOfExpiryDays):
// its pages, in both directions, are the matching IoCs by (value, id),
// whether the range ends inside a day or on its first microsecond, holds
// one day or many, comes with other conditions, or meets more days than a
// page merges (the walk of each kind's values then reads it), before and
// after the keys; on SQLite, which walks each kind's values, the same.
func TestValuePagesOfAnExpiryRangeMergeItsDays(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "days")
		// t0 is 12:00 UTC: these expire on the first day (13:00, 23:59:59),
		// on the second's first microsecond, inside it, on the bound of
		// +1d and after it, and three days on.
		retentions := []time.Duration{time.Hour, 12*time.Hour - time.Second, 12 * time.Hour, 18 * time.Hour,
			day, 30 * time.Hour, 3 * day}
		for b, retention := range retentions {
			var inds []ioc.Indicator
			for i := range 6 {
				var tags []string
				if (i+b)%3 == 0 {
					tags = []string{"third"}
				}
				// Values of every batch interleave in value order, of
				// two kinds.
				inds = append(inds, dom(fmt.Sprintf("v%d-%d.example", i, b), "src", (i*7+b*13)%101, tags...),
					ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("10.%d.0.%d", i, b), Source: "src", Score: 60, Tags: tags})
			}
			apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: retention, Indicators: inds})
		}
		// One IoC a day for 40 days: more days than a page merges.
		for d := 5; d < 45; d++ {
			apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: time.Duration(d) * day,
				Indicators: []ioc.Indicator{dom(fmt.Sprintf("v%d-day%d.example", d%7, d), "src", 50)}})
		}

		at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
		cases := []struct {
			name string
			f    store.IoCFilter
			// merged says the page reads the days, not the walk.
			merged bool
		}{
			{"expires before +1d", store.IoCFilter{ExpiresBefore: at(day)}, true},
			{"expires before +1d, IPs", store.IoCFilter{ExpiresBefore: at(day), Types: []ioc.Kind{ioc.IP}}, true},
			{"expires before +1d, tag", store.IoCFilter{ExpiresBefore: at(day), Tag: "third"}, true},
			{"expires before +1d, min score 30", store.IoCFilter{ExpiresBefore: at(day), MinScore: ptr(30)}, true},
			{"expires after the first day's last second, before +3d", store.IoCFilter{ExpiresAfter: at(12*time.Hour - time.Second), ExpiresBefore: at(3*day + time.Hour)}, true},
			{"expires after +1h, before +3d", store.IoCFilter{ExpiresAfter: at(time.Hour), ExpiresBefore: at(3 * day)}, true},
			{"expires from +4d to +30d", store.IoCFilter{ExpiresAfter: at(4 * day), ExpiresBefore: at(30 * day)}, true},
			{"expires before now", store.IoCFilter{ExpiresBefore: at(0)}, true},
			{"expires after now", store.IoCFilter{ExpiresAfter: at(0)}, false},
			{"expires after +2d", store.IoCFilter{ExpiresAfter: at(2 * day)}, false},
		}
		sent := recordStatements(s)
		check := func(state string) {
			t.Helper()
			all := storedRows(t, s)
			eachPageSetting(s, func(sparse, countCap int) {
				for _, c := range cases {
					for _, desc := range []bool{false, true} {
						want := idsByValue(t, all, c.f, desc)
						sent()
						got := pagedIDs(t, s, c.f, store.IoCOrder{Field: store.IoCOrderValue, Desc: desc}, 2, nil)
						if !slices.Equal(got, want) {
							t.Errorf("%s, %s, desc %v, sparse %d, cap %d: pages\n got %v\nwant %v",
								state, c.name, desc, sparse, countCap, got, want)
						}
						// With few keys read (a tag's), the page reads
						// them and sorts them; SQLite has no index of
						// the days.
						if sparse != 1 {
							continue
						}
						merged := slices.ContainsFunc(sent(), func(q string) bool {
							return strings.Contains(q, "expires_at / 86400000000 = ")
						})
						if want := c.merged && s.Dialect == store.Postgres; merged != want {
							t.Errorf("%s, %s, desc %v, cap %d: read the days %v, want %v", state, c.name, desc, countCap, merged, want)
						}
					}
				}
			})
		}
		check("before the keys")
		catchUpAll(t, s.CatchUpKeys, 1000)
		check("keys caught up")

		// The migration builds PostgreSQL's index over the IoCs already
		// stored, and takes it away going down.
		made := func() bool { return slices.Contains(iocIndexes(t, s), "iocs_expiry_day_value_idx") }
		m, days := migration(t, s, "20270123000100")
		if err := days.Down(ctx, m, days); err != nil {
			t.Fatal(err)
		}
		if made() {
			t.Error("the index is there after its migration went down")
		}
		if err := days.Up(ctx, m, days); err != nil {
			t.Fatal(err)
		}
		if made() != (s.Dialect == store.Postgres) {
			t.Errorf("the index made %v after its migration went up, want it on PostgreSQL only", made())
		}
		check("index made again")
	})
}
