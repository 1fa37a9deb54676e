package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/migrate"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// An expiry zone's span holds the expiry of each of its IoCs changed up to
// the keys' stamp, through catching up, re-sightings, a sweep, the
// cleaner and the migration; a page of an expiry range in id order walks
// only the zones that meet the range, and finds what the plain query
// finds.
func TestExpiryZonesHoldTheirIoCs(t *testing.T) {
	withExpiryZones(t, 4)
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		// 24 IoCs kept ten days, then 8 for an hour: the newest.
		batch := zoneBatches(t, s, feed)
		batch(0, 12, t0, 10*day)
		batch(12, 24, t0.Add(time.Minute), 10*day)
		batch(24, 32, t0.Add(2*time.Minute), time.Hour)
		soon := t0.Add(day)
		expiring := store.IoCFilter{ExpiresBefore: &soon}
		checkZones(t, s, "before the indexer", expiring, 8)
		catchUpAll(t, s.CatchUpKeys, 5)
		if exact := zonesExact(t, s); !exact {
			t.Error("zones made from new IoCs are not their spans")
		}
		checkZones(t, s, "caught up", expiring, 8)
		runs, err := store.ExpiryZoneRuns(ctx, s, expiring, false)
		if err != nil {
			t.Fatal(err)
		}
		// The short-lived IoCs' ids, and the zones that hold them.
		var short []int64
		if err := store.Reader(s).NewRaw("SELECT id FROM iocs WHERE expires_at < ? ORDER BY id", soon.UnixMicro()).Scan(ctx, &short); err != nil {
			t.Fatal(err)
		}
		lo, hi := short[0]/4*4, short[len(short)-1]/4*4+3
		if !slices.Equal(runs, [][2]int64{{lo, hi}}) {
			t.Errorf("an expiresBefore +1d page walks %v, want only the zones of the short-lived IoCs, [%d %d]", runs, lo, hi)
		}

		// Re-sighted for ten days, the first four short-lived IoCs leave
		// their old expiry in their zones' spans, until the cleaner.
		batch(24, 28, t0.Add(3*time.Minute), 10*day)
		checkZones(t, s, "re-sighted", expiring, 4)
		catchUpAll(t, s.CatchUpKeys, 5)
		checkZones(t, s, "re-sighted, caught up", expiring, 4)
		if zonesExact(t, s) {
			t.Error("zones exact after a re-sighting: the test moves no expiry")
		}
		cleanInPieces(t, s, 20)
		if !zonesExact(t, s) || !zoneValuesExact(t, s) {
			t.Error("zones not their spans (or values) after the cleaner's pass")
		}
		checkZones(t, s, "cleaned", expiring, 4)

		// The sweep narrows the zones of what it deletes, in its own
		// transactions: no zone is left for the swept IoCs.
		if _, n, err := s.SweepExpired(ctx, t0.Add(2*time.Hour), 0); err != nil || n != 4 {
			t.Fatalf("swept %d IoCs, %v; want the 4 short-lived", n, err)
		}
		if !zonesExact(t, s) {
			t.Error("zones not their spans right after the sweep")
		}
		checkZones(t, s, "swept", expiring, 0)
		if runs, err := store.ExpiryZoneRuns(ctx, s, expiring, false); err != nil || len(runs) != 0 {
			t.Errorf("after the sweep an expiresBefore +1d page walks %v (%v), want no zone", runs, err)
		}

		// The migrations make the zones and their bounds from the IoCs, of
		// their own size.
		migrateZonesAgain(t, s)
		if n := countRows(t, s, "ioc_expiry_zones"); n != 1 || !zonesExact(t, s) || !zoneValuesExact(t, s) {
			t.Errorf("%d zones after the migration, want 1 (28 IoCs), exact: %v, values %v", n, zonesExact(t, s), zoneValuesExact(t, s))
		}
		batch(32, 36, t0.Add(4*time.Minute), time.Hour)
		checkZones(t, s, "migrated, more short-lived IoCs", expiring, 4)
		catchUpAll(t, s.CatchUpKeys, 5)
		checkZones(t, s, "migrated, caught up", expiring, 4)
	})
}

// A page of an expiry range in id order that the zones fill still meets
// the IoCs changed since the keys on either side of its last: old IoCs
// that a re-sighting brought into the range (before it, ascending) and
// new ones (after it, descending).
func TestExpiryZonePagesMeetIoCsChangedSince(t *testing.T) {
	withExpiryZones(t, 4)
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		batch := zoneBatches(t, s, feed)
		batch(0, 24, t0, 10*day)
		batch(24, 32, t0.Add(time.Minute), time.Hour)
		catchUpAll(t, s.CatchUpKeys, 100)
		soon := t0.Add(day)
		expiring := store.IoCFilter{ExpiresBefore: &soon}
		checkZones(t, s, "caught up", expiring, 8)
		batch(0, 4, t0.Add(2*time.Minute), time.Hour)
		batch(32, 36, t0.Add(3*time.Minute), time.Hour)
		checkZones(t, s, "changed since on both sides", expiring, 16)
	})
}

// zoneBatches returns a function that applies a batch of feed's IoCs
// z<from>.example to z<to-1>.example at now, kept for retention.
func zoneBatches(t *testing.T, s *store.Store, feed int64) func(from, to int, now time.Time, retention time.Duration) {
	return func(from, to int, now time.Time, retention time.Duration) {
		t.Helper()
		var inds []ioc.Indicator
		for i := from; i < to; i++ {
			inds = append(inds, dom(fmt.Sprintf("z%02d.example", i), "src", 50))
		}
		apply(t, s, store.Batch{FeedID: feed, Now: now, Retention: retention, Indicators: inds})
	}
}

// checkZones checks that every IoC is in its zone's span, and that the pages of f (an expiry range) in id order, both
// ways, are the IoCs that match it (want of them), in pages of 3.
func checkZones(t *testing.T, s *store.Store, state string, f store.IoCFilter, want int) {
	t.Helper()
	ctx := context.Background()
	checkZoneSpans(t, s, state)
	var all []int64
	if err := store.Reader(s).NewRaw("SELECT id FROM iocs WHERE expires_at < ? ORDER BY id", f.ExpiresBefore.UnixMicro()).Scan(ctx, &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != want {
		t.Fatalf("%s: %d IoCs expire before %s, want %d", state, len(all), f.ExpiresBefore, want)
	}
	for _, desc := range []bool{false, true} {
		var got []int64
		for _, r := range pagedIoCs(t, s, f, store.IoCOrder{Desc: desc}, 3, nil) {
			got = append(got, r.ID)
		}
		wantIDs := slices.Clone(all)
		if desc {
			slices.Reverse(wantIDs)
		}
		if !slices.Equal(got, wantIDs) {
			t.Errorf("%s, desc %v: pages %v, want %v", state, desc, got, wantIDs)
		}
	}
}

// checkZoneSpans checks that every IoC is within its zone's bounds: the
// writers widen them in their transactions.
func checkZoneSpans(t *testing.T, s *store.Store, state string) {
	t.Helper()
	if n := countRows(t, s, fmt.Sprintf(`iocs WHERE NOT EXISTS (
	SELECT 1 FROM ioc_expiry_zones z WHERE z.zone = iocs.id / %d AND iocs.expires_at BETWEEN z.lo AND z.hi
	AND iocs.first_seen BETWEEN z.first_lo AND z.first_hi AND iocs.last_seen BETWEEN z.last_lo AND z.last_hi
	AND iocs.score BETWEEN z.score_lo AND z.score_hi)`, *store.ExpiryZone)); n != 0 {
		t.Errorf("%s: %d IoCs outside their zone's span", state, n)
	}
	if s.Dialect != store.SQLite {
		return
	}
	if n := countRows(t, s, fmt.Sprintf(`iocs WHERE NOT EXISTS (
	SELECT 1 FROM ioc_zone_values v WHERE v.zone = iocs.id / %d AND v.type = iocs.type AND iocs.value BETWEEN v.lo AND v.hi)`,
		*store.ExpiryZone)); n != 0 {
		t.Errorf("%s: %d IoCs outside their zone's values", state, n)
	}
	if n := countRows(t, s, fmt.Sprintf(`iocs JOIN ioc_zone_values v ON v.zone = iocs.id / %d AND v.type = iocs.type
	WHERE v.ids IS NOT NULL AND ',' || v.ids || ',' NOT LIKE '%%,' || iocs.id || ',%%'`, *store.ExpiryZone)); n != 0 {
		t.Errorf("%s: %d IoCs not among the ids their zone lists", state, n)
	}
	if n := countRows(t, s, fmt.Sprintf(`ioc_zone_values v WHERE v.n < (SELECT count(*) FROM iocs WHERE iocs.id / %d = v.zone AND iocs.type = v.type)
	OR (v.ids IS NULL) != (v.n > %d)`, *store.ExpiryZone, *store.ZoneKindListed)); n != 0 {
		t.Errorf("%s: %d zones' kinds count fewer IoCs than they hold, or list ids past %d or none below", state, n, *store.ZoneKindListed)
	}
}

// zonesExact says whether every zone's span is its IoCs' and every zone
// with IoCs has one.
func zonesExact(t *testing.T, s *store.Store) bool {
	t.Helper()
	type zoneRow struct {
		Zone, Lo, Hi, FirstLo, FirstHi, LastLo, LastHi, ScoreLo, ScoreHi int64
	}
	var zones, spans []zoneRow
	if err := store.Reader(s).NewRaw("SELECT zone, lo, hi, first_lo, first_hi, last_lo, last_hi, score_lo, score_hi FROM ioc_expiry_zones ORDER BY zone").Scan(context.Background(), &zones); err != nil {
		t.Fatal(err)
	}
	if err := store.Reader(s).NewRaw(fmt.Sprintf(`SELECT id / %[1]d AS zone, min(expires_at) AS lo, max(expires_at) AS hi,
	min(first_seen) AS first_lo, max(first_seen) AS first_hi, min(last_seen) AS last_lo, max(last_seen) AS last_hi,
	min(score) AS score_lo, max(score) AS score_hi FROM iocs GROUP BY id / %[1]d ORDER BY 1`, *store.ExpiryZone)).Scan(context.Background(), &spans); err != nil {
		t.Fatal(err)
	}
	return slices.Equal(zones, spans)
}

// zoneValuesExact says whether, on SQLite, the values of every kind of
// every zone are its IoCs' least and greatest.
func zoneValuesExact(t *testing.T, s *store.Store) bool {
	t.Helper()
	if s.Dialect != store.SQLite {
		return true
	}
	type valuesRow struct {
		Zone   int64
		Type   string
		Lo, Hi string
		N      int64
		IDs    *string `bun:"ids"`
	}
	var kept, made []valuesRow
	if err := store.Reader(s).NewRaw("SELECT zone, type, lo, hi, n, ids FROM ioc_zone_values ORDER BY zone, type").Scan(context.Background(), &kept); err != nil {
		t.Fatal(err)
	}
	if err := store.Reader(s).NewRaw(fmt.Sprintf(`SELECT id / %[1]d AS zone, type, min(value) AS lo, max(value) AS hi,
	count(*) AS n, CASE WHEN count(*) <= %[2]d THEN group_concat(id) END AS ids
	FROM iocs GROUP BY id / %[1]d, type ORDER BY 1, 2`, *store.ExpiryZone, *store.ZoneKindListed)).Scan(context.Background(), &made); err != nil {
		t.Fatal(err)
	}
	// The lists as sets: each writer appends its own.
	sorted := func(ids *string) string {
		if ids == nil {
			return "none"
		}
		list := strings.Split(*ids, ",")
		slices.Sort(list)
		return strings.Join(list, ",")
	}
	return slices.EqualFunc(kept, made, func(a, b valuesRow) bool {
		return a.Zone == b.Zone && a.Type == b.Type && a.Lo == b.Lo && a.Hi == b.Hi && a.N == b.N && sorted(a.IDs) == sorted(b.IDs)
	})
}

// migrateZonesAgain takes the expiry zones' migrations down and up again,
// which make the zones, their bounds and (SQLite) their values from the
// IoCs in zones of the migrations' own 16384 ids; the store's zones are cut
// so until the end of t.
func migrateZonesAgain(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	m, zones := migration(t, s, "20270113000100")
	_, bounds := migration(t, s, "20270119000100")
	_, values := migration(t, s, "20270124000100")
	_, ids := migration(t, s, "20270125000100")
	for _, step := range []struct {
		run func(context.Context, *migrate.Migrator, *migrate.Migration) error
		of  *migrate.Migration
	}{{ids.Down, ids}, {values.Down, values}, {bounds.Down, bounds}, {zones.Down, zones},
		{zones.Up, zones}, {bounds.Up, bounds}, {values.Up, values}, {ids.Up, ids}} {
		if err := step.run(ctx, m, step.of); err != nil {
			t.Fatal(err)
		}
	}
	prevZone, prevListed := *store.ExpiryZone, *store.ZoneKindListed
	*store.ExpiryZone, *store.ZoneKindListed = 16384, 256
	t.Cleanup(func() { *store.ExpiryZone, *store.ZoneKindListed = prevZone, prevListed })
}

// cleanInPieces runs the key cleaner's pass from its start, n pieces of 4
// keys (and zones).
func cleanInPieces(t *testing.T, s *store.Store, n int) {
	t.Helper()
	at := store.KeyPositions{}
	for range n {
		var err error
		if at, err = s.CleanKeys(context.Background(), at, 4); err != nil {
			t.Fatal(err)
		}
	}
}

// withExpiryZones cuts the ids into expiry zones of n for the test, and
// returns the size it replaced.
func withExpiryZones(t *testing.T, n int64) (saved int64) {
	saved = *store.ExpiryZone
	*store.ExpiryZone = n
	t.Cleanup(func() { *store.ExpiryZone = saved })
	return saved
}
