package store_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// A page of an expiry range by first or last sighting or by score, past
// the count cap, reads the expiry zones in the order of their bounds of
// that order, or walks the order, or both at once (pageOfZones): each way's
// pages, in both directions, are the matching IoCs in the page's order,
// before the keys are made, after, and after re-sightings that moved
// sightings and scores since (which the zones hold only once the keys
// catch up). Some batches come with an earlier time than the one before,
// so that zones' bounds overlap.
func TestExpiryRangePagesReadTheZonesByBound(t *testing.T) {
	withExpiryZones(t, 4)
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "zones")
		batch := func(from, to int, now time.Time, retention time.Duration, score func(int) int) {
			t.Helper()
			var inds []ioc.Indicator
			for i := from; i < to; i++ {
				var tags []string
				if i%3 == 0 {
					tags = []string{"third"}
				}
				inds = append(inds, dom(fmt.Sprintf("b%02d.example", i), "src", score(i), tags...))
			}
			apply(t, s, store.Batch{FeedID: feed, Now: now, Retention: retention, Indicators: inds})
		}
		spread := func(i int) int { return i * 37 % 101 }
		// Long-lived IoCs first, then short-lived ones, one batch of them
		// seen before the batch before it. The short-lived share a score
		// but one, so that zones' bounds tie, and the zone of the one is
		// read first, before zones of lower ids.
		batch(0, 10, t0, 30*day, spread)
		batch(10, 20, t0.Add(time.Minute), 30*day, spread)
		batch(20, 27, t0.Add(3*time.Minute), time.Hour, func(int) int { return 50 })
		batch(27, 34, t0.Add(2*time.Minute), time.Hour, func(i int) int {
			if i == 32 {
				return 40
			}
			return 50
		})
		batch(34, 40, t0.Add(4*time.Minute), 30*day, spread)

		soon := t0.Add(day)
		later := t0.Add(2 * day)
		cases := []struct {
			name string
			f    store.IoCFilter
		}{
			{"expires before +1d", store.IoCFilter{ExpiresBefore: &soon}},
			{"expires after +1d", store.IoCFilter{ExpiresAfter: &soon}},
			{"expires before +2d, tag", store.IoCFilter{ExpiresBefore: &later, Tag: "third"}},
			{"expires before +1d, min score 30", store.IoCFilter{ExpiresBefore: &soon, MinScore: ptr(30)}},
		}
		orders := map[store.IoCOrderField]func(storedRow) int64{
			store.IoCOrderFirstSeen: func(r storedRow) int64 { return r.FirstSeen },
			store.IoCOrderLastSeen:  func(r storedRow) int64 { return r.LastSeen },
			store.IoCOrderScore:     func(r storedRow) int64 { return r.Score },
		}
		check := func(state string) {
			t.Helper()
			all := storedRows(t, s)
			savedSparse, savedCap := *store.SparseKeys, s.IoCCountCap
			defer func() { *store.SparseKeys, s.IoCCountCap = savedSparse, savedCap }()
			ways := map[string][2]bool{"both": {true, true}, "walk": {true, false}, "zones": {false, true}}
			// Sparse keys of 1: SQLite walks the order's keys, where the
			// range's few keys would be read and sorted instead. Below the
			// count cap, PostgreSQL reads every match through the expiry's
			// index (pageOfFewExpiring).
			for _, sparse := range []int{savedSparse, 1} {
				for _, countCap := range []int{3, 1000} {
					*store.SparseKeys, s.IoCCountCap = sparse, countCap
					for _, c := range cases {
						for field, key := range orders {
							for _, desc := range []bool{false, true} {
								var want []int64
								for _, r := range slices.SortedFunc(slices.Values(all), func(a, b storedRow) int {
									if desc {
										a, b = b, a
									}
									return cmp.Or(cmp.Compare(key(a), key(b)), cmp.Compare(a.ID, b.ID))
								}) {
									if r.matches(t, c.f) {
										want = append(want, r.ID)
									}
								}
								if len(want) <= 3 {
									t.Fatalf("%s: %d IoCs, want more than the cap", c.name, len(want))
								}
								for way, takes := range ways {
									restore := store.ZoneWays(takes[0], takes[1])
									got := pagedIDs(t, s, c.f, store.IoCOrder{Field: field, Desc: desc}, 2, nil)
									restore()
									if !slices.Equal(got, want) {
										t.Errorf("%s, %s by %s, desc %v, sparse %d, cap %d, %s: pages\n got %v\nwant %v",
											state, c.name, field, desc, sparse, countCap, way, got, want)
									}
								}
							}
						}
					}
				}
			}
		}
		check("before the keys")
		catchUpAll(t, s.CatchUpKeys, 1000)
		check("keys caught up")
		// Re-sighted later with other scores: their zones hold the new
		// sightings and scores only once the keys catch up.
		batch(0, 6, t0.Add(5*time.Minute), 30*day, func(i int) int { return 100 - spread(i) })
		batch(20, 24, t0.Add(6*time.Minute), time.Hour, func(int) int { return 5 })
		check("re-sighted since the keys")
		catchUpAll(t, s.CatchUpKeys, 1000)
		check("re-sighted, keys caught up")
		checkZoneSpans(t, s, "re-sighted, keys caught up")

		// Seen by another feed for longer, with a lower score: when the
		// sweep drops the first feed's sighting, the IoC's score and
		// expiry fall below the rest of its zone's, which the zone must
		// hold.
		other := newFeed(t, s, "other")
		apply(t, s, store.Batch{FeedID: other, Now: t0.Add(7 * time.Minute), Retention: 30 * day,
			Indicators: []ioc.Indicator{dom("b25.example", "src", 1)}})
		if _, n, err := s.SweepExpired(ctx, t0.Add(2*time.Hour), 0); err != nil || n == 0 {
			t.Fatalf("swept %d, %v; want the short-lived", n, err)
		}
		checkZoneSpans(t, s, "swept, one IoC kept by another feed")
		first, err := s.IoCs(ctx, store.IoCFilter{ExpiresAfter: &soon}, store.IoCOrder{Field: store.IoCOrderScore}, 1, "")
		if err != nil || len(first.IoCs) != 1 || first.IoCs[0].Value != "b25.example" {
			t.Errorf("swept: first by score %+v (%v), want b25.example, its score now 1", first, err)
		}

		// The migration makes every zone's bounds from its IoCs, in zones
		// of its own size, 16384 ids: one here.
		m, bounds := migration(t, s, "20270119000100")
		if err := bounds.Down(ctx, m, bounds); err != nil {
			t.Fatal(err)
		}
		*store.ExpiryZone = 16384
		// Zones the key indexer had not made before the upgrade.
		if _, err := s.DB.ExecContext(ctx, "DELETE FROM ioc_expiry_zones"); err != nil {
			t.Fatal(err)
		}
		if err := bounds.Up(ctx, m, bounds); err != nil {
			t.Fatal(err)
		}
		// SQLite's zone values and their ids, of 16384 ids too.
		_, values := migration(t, s, "20270124000100")
		_, ids := migration(t, s, "20270125000100")
		for _, err := range []error{ids.Down(ctx, m, ids), values.Down(ctx, m, values), values.Up(ctx, m, values), ids.Up(ctx, m, ids)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := countRows(t, s, "ioc_expiry_zones"); n != 1 || !zonesExact(t, s) || !zoneValuesExact(t, s) {
			t.Errorf("%d zones after the migration, want 1, exact: %v, values %v", n, zonesExact(t, s), zoneValuesExact(t, s))
		}
	})
}

// walkedAsIoCs matches a statement that reads a walk of an order's index,
// a LIMIT of it, as iocs.
var walkedAsIoCs = regexp.MustCompile(`LIMIT \d+\) AS iocs`)

// The zones' read goes alone for its first step, the zones that meet the
// range and the first one's IoCs: when that finds the page, as for the
// short-lived IoCs of the last batch by first sighting, the walk of the
// order (SQLite's keys, PostgreSQL's index) never starts.
func TestExpiryZonesReadAloneFirst(t *testing.T) {
	withExpiryZones(t, 16)
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "zones")
		for b, retention := range []time.Duration{30 * day, 30 * day, time.Hour} {
			var inds []ioc.Indicator
			for i := range 16 {
				inds = append(inds, dom(fmt.Sprintf("z%d-%02d.example", b, i), "src", 50))
			}
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(b) * time.Minute), Retention: retention, Indicators: inds})
		}
		catchUpAll(t, s.CatchUpKeys, 1000)
		// Few keys past the cap: SQLite's page walks the order's keys
		// rather than find the range's few, as among millions.
		savedSparse, savedCap := *store.SparseKeys, s.IoCCountCap
		defer func() { *store.SparseKeys, s.IoCCountCap = savedSparse, savedCap }()
		*store.SparseKeys, s.IoCCountCap = 1, 3
		soon := t0.Add(day)
		sent := recordStatements(s)
		page, err := s.IoCs(ctx, store.IoCFilter{ExpiresBefore: &soon}, store.IoCOrder{Field: store.IoCOrderFirstSeen}, 4, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(page.IoCs) != 4 || !page.TotalCapped || !strings.HasPrefix(page.IoCs[0].Value, "z2-") {
			t.Fatalf("first page of the short-lived by first sighting: %v, capped %v",
				eachIoCs(page.IoCs, func(r store.IoC) string { return r.Value }), page.TotalCapped)
		}
		zones := false
		for _, q := range sent() {
			zones = zones || strings.Contains(q, "ioc_expiry_zones")
			// A walk reads a LIMIT of the order's index as iocs; the rows
			// read by id on PostgreSQL are a subquery too, without one.
			if strings.Contains(q, "WITH keyed AS MATERIALIZED") || walkedAsIoCs.MatchString(q) {
				t.Errorf("the walk started: %.120s", q)
			}
		}
		if !zones {
			t.Error("the page did not read the zones")
		}
	})
}

// storedRow is a stored IoC's columns that tests' oracles filter and order
// IoCs by.
type storedRow struct {
	ID        int64  `bun:"id"`
	Type      string `bun:"type"`
	Value     string `bun:"value"`
	Score     int64  `bun:"score"`
	Tags      string `bun:"tags"`
	FirstSeen int64  `bun:"first_seen"`
	LastSeen  int64  `bun:"last_seen"`
	Expires   int64  `bun:"expires_at"`
}

// storedRows reads every stored IoC's storedRow.
func storedRows(t *testing.T, s *store.Store) []storedRow {
	t.Helper()
	var all []storedRow
	if err := s.DB.NewSelect().Table("iocs").Column("id", "type", "value", "score", "tags", "first_seen", "last_seen", "expires_at").
		Scan(context.Background(), &all); err != nil {
		t.Fatal(err)
	}
	return all
}

// idsByValue is the ids of those of rows that match f, by (value, id),
// descending when desc: the oracle of pages in value order.
func idsByValue(t *testing.T, rows []storedRow, f store.IoCFilter, desc bool) []int64 {
	t.Helper()
	var ids []int64
	for _, r := range slices.SortedFunc(slices.Values(rows), func(a, b storedRow) int {
		if desc {
			a, b = b, a
		}
		return cmp.Or(cmp.Compare(a.Value, b.Value), cmp.Compare(a.ID, b.ID))
	}) {
		if r.matches(t, f) {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// eachPageSetting calls check with the sparse keys' bound at its own and at
// 1 and the count cap at 3 and at 1000, the ways a page may take, and puts
// both back after.
func eachPageSetting(s *store.Store, check func(sparse, countCap int)) {
	savedSparse, savedCap := *store.SparseKeys, s.IoCCountCap
	defer func() { *store.SparseKeys, s.IoCCountCap = savedSparse, savedCap }()
	for _, sparse := range []int{savedSparse, 1} {
		for _, countCap := range []int{3, 1000} {
			*store.SparseKeys, s.IoCCountCap = sparse, countCap
			check(sparse, countCap)
		}
	}
}

// matches says whether r matches f's types, tag, minScore and expiry
// range, the conditions an oracle checks on its own.
func (r storedRow) matches(t *testing.T, f store.IoCFilter) bool {
	t.Helper()
	var tags []string
	if r.Tags != "" {
		if err := json.Unmarshal([]byte(r.Tags), &tags); err != nil {
			t.Fatal(err)
		}
	}
	return (f.ExpiresBefore == nil || r.Expires < f.ExpiresBefore.UnixMicro()) &&
		(f.ExpiresAfter == nil || r.Expires > f.ExpiresAfter.UnixMicro()) &&
		(f.Tag == "" || slices.Contains(tags, f.Tag)) &&
		(f.MinScore == nil || r.Score >= int64(*f.MinScore)) &&
		(len(f.Types) == 0 || slices.Contains(f.Types, ioc.Kind(r.Type)))
}
