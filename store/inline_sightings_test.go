package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/uptrace/bun/migrate"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/migrations"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// keptAs says where a domain IoC's sightings are kept: the feed and source
// of the sighting in its own row (0, "" when none), and how many rows of
// sighting_rows it has.
func keptAs(t testing.TB, s *store.Store, value string) (feedID int64, source string, rows int) {
	t.Helper()
	var feed sql.NullInt64
	var src sql.NullString
	if err := s.DB.QueryRowContext(context.Background(), `SELECT feed_id, source,
	(SELECT count(*) FROM sighting_rows r WHERE r.ioc_id = iocs.id) FROM iocs WHERE type = ? AND value = ?`,
		string(ioc.Domain), value).Scan(&feed, &src, &rows); err != nil {
		t.Fatalf("IoC %s: %v", value, err)
	}
	return feed.Int64, src.String, rows
}

func wantKept(t testing.TB, s *store.Store, value string, feedID int64, source string, rows int) {
	t.Helper()
	if f, src, n := keptAs(t, s, value); f != feedID || src != source || n != rows {
		t.Errorf("%s kept inline as (%d, %q) with %d rows; want (%d, %q) with %d", value, f, src, n, feedID, source, rows)
	}
}

// wantIoCCount checks the IoC count the writers keep (ioc_stats).
func wantIoCCount(t testing.TB, s *store.Store, want int64) {
	t.Helper()
	if st, err := s.IoCStats(context.Background()); err != nil || st.Count != want {
		t.Errorf("IoC count %d, %v; want %d", st.Count, err, want)
	}
}

// sightingsOf reads an IoC's sightings through the store, as "feed/source
// score tags first last expires" lines.
func sightingsOf(t testing.TB, s *store.Store, value string) []string {
	t.Helper()
	ss, err := s.Sightings(context.Background(), getIoC(t, s, ioc.Domain, value).ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range ss {
		out = append(out, fmt.Sprintf("%d/%s %d %v %s %s %s", g.FeedID, g.Source, g.Score, g.Tags,
			g.FirstSeen.Sub(t0), g.LastSeen.Sub(t0), g.ExpiresAt.Sub(t0)))
	}
	return out
}

func wantSightings(t testing.TB, s *store.Store, value string, want ...string) {
	t.Helper()
	if got := sightingsOf(t, s, value); !slices.Equal(got, want) {
		t.Errorf("sightings of %s:\n got %q\nwant %q", value, got, want)
	}
}

// An IoC reported by one (feed, source) keeps that sighting in its own row;
// a second one moves it, unchanged, beside the new one in sighting_rows.
func TestInlineSightingBecomesARow(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		h := time.Hour
		res := apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("x.example", "s1", 10, "t1")}})
		if res.Stored != 1 || res.Added != 1 {
			t.Errorf("first report = %+v", res)
		}
		wantKept(t, s, "x.example", a, "s1", 0)
		wantSightings(t, s, "x.example", fmt.Sprintf("%d/s1 10 [t1] 0s 0s 24h0m0s", a))

		// The same (feed, source) again: still inline, first seen kept.
		res = apply(t, s, store.Batch{FeedID: a, Now: t0.Add(h), Retention: day, Indicators: []ioc.Indicator{dom("x.example", "s1", 20, "t2")}})
		if res.Stored != 1 || res.Added != 0 {
			t.Errorf("re-report = %+v", res)
		}
		wantKept(t, s, "x.example", a, "s1", 0)
		wantIoC(t, s, "x.example", 20, []string{"t2"}, t0, t0.Add(h), t0.Add(h+day))
		wantSightings(t, s, "x.example", fmt.Sprintf("%d/s1 20 [t2] 0s 1h0m0s 25h0m0s", a))

		// Another source of the same feed: both are rows now.
		res = apply(t, s, store.Batch{FeedID: a, Now: t0.Add(2 * h), Retention: day, Indicators: []ioc.Indicator{dom("x.example", "s2", 5, "t3")}})
		if res.Stored != 1 || res.Added != 1 {
			t.Errorf("second source = %+v", res)
		}
		wantKept(t, s, "x.example", 0, "", 2)
		wantIoC(t, s, "x.example", 20, []string{"t2", "t3"}, t0, t0.Add(2*h), t0.Add(2*h+day))
		wantSightings(t, s, "x.example",
			fmt.Sprintf("%d/s1 20 [t2] 0s 1h0m0s 25h0m0s", a), fmt.Sprintf("%d/s2 5 [t3] 2h0m0s 2h0m0s 26h0m0s", a))

		// Another feed, then a revocation: rows come and go as before.
		apply(t, s, store.Batch{FeedID: b, Now: t0.Add(3 * h), Retention: day, Indicators: []ioc.Indicator{dom("x.example", "s1", 1)}})
		wantKept(t, s, "x.example", 0, "", 3)
		res = apply(t, s, store.Batch{FeedID: a, Now: t0.Add(4 * h), Retention: day, Indicators: []ioc.Indicator{
			{Kind: ioc.Domain, Value: "x.example", Source: "s2", Revoked: true}}})
		if res.Removed != 1 {
			t.Errorf("revocation = %+v", res)
		}
		wantKept(t, s, "x.example", 0, "", 2)
		wantIoC(t, s, "x.example", 20, []string{"t2"}, t0, t0.Add(3*h), t0.Add(3*h+day))

		// A new IoC reported twice in its first batch starts as rows.
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("y.example", "s1", 1), dom("y.example", "s2", 2)}})
		wantKept(t, s, "y.example", 0, "", 2)
		if n := count(t, s, "sightings"); n != 4 {
			t.Errorf("%d sightings, want 4", n)
		}
	})
}

// The one batch that re-reports the inline sighting and brings another
// moves it with its first time, then updates it like any row.
func TestInlineSightingReportedWithAnother(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("x.example", "s1", 10)}})
		res := apply(t, s, store.Batch{FeedID: a, Now: t0.Add(day / 2), Retention: day, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 30, "again"), dom("x.example", "s2", 40)}})
		if res.Stored != 2 || res.Added != 1 {
			t.Errorf("batch = %+v", res)
		}
		wantKept(t, s, "x.example", 0, "", 2)
		wantSightings(t, s, "x.example",
			fmt.Sprintf("%d/s2 40 [] 12h0m0s 12h0m0s 36h0m0s", a), fmt.Sprintf("%d/s1 30 [again] 0s 12h0m0s 36h0m0s", a))
		wantIoC(t, s, "x.example", 40, []string{"again"}, t0, t0.Add(day/2), t0.Add(day+day/2))

		// An inline sighting of another feed moves when this one reports.
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: 2 * day, Indicators: []ioc.Indicator{dom("z.example", "s", 10, "b")}})
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(day), Retention: day, Indicators: []ioc.Indicator{dom("z.example", "s", 20, "a")}})
		wantKept(t, s, "z.example", 0, "", 2)
		wantSightings(t, s, "z.example",
			fmt.Sprintf("%d/s 20 [a] 24h0m0s 24h0m0s 48h0m0s", a), fmt.Sprintf("%d/s 10 [b] 0s 0s 48h0m0s", b))
	})
}

// Revoking the inline sighting removes its IoC, or, when the batch brings
// another, leaves the other alone as a row.
func TestInlineSightingRevoked(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		a := newFeed(t, s, "TSV_a")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("gone.example", "s", 10), dom("moved.example", "s", 10), dom("kept.example", "s", 10)}})
		res := apply(t, s, store.Batch{FeedID: a, Now: t0.Add(time.Hour), Retention: day, Indicators: []ioc.Indicator{
			{Kind: ioc.Domain, Value: "gone.example", Source: "s", Revoked: true},
			{Kind: ioc.Domain, Value: "moved.example", Source: "s", Revoked: true}, dom("moved.example", "s2", 50),
			{Kind: ioc.Domain, Value: "kept.example", Source: "other", Revoked: true}}})
		if res.Removed != 2 || res.Stored != 1 || res.Added != 1 {
			t.Errorf("batch = %+v, want 2 removed, 1 stored and added", res)
		}
		if iocExists(t, s, ioc.Domain, "gone.example") {
			t.Error("an IoC whose one sighting was revoked is stored")
		}
		wantKept(t, s, "moved.example", 0, "", 1)
		wantIoC(t, s, "moved.example", 50, nil, t0.Add(time.Hour), t0.Add(time.Hour), t0.Add(time.Hour+day))
		wantKept(t, s, "kept.example", a, "s", 0)
		wantIoC(t, s, "kept.example", 10, nil, t0, t0, t0.Add(day))
		wantIoCCount(t, s, 2)
	})
}

// An expired inline sighting moves as it is when another feed reports its
// IoC, out of the aggregates; the sweep then deletes its row.
func TestExpiredInlineSighting(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("x.example", "s", 90, "old")}})
		apply(t, s, store.Batch{FeedID: b, Now: t0.Add(2 * day), Retention: day, Indicators: []ioc.Indicator{dom("x.example", "s", 20, "new")}})
		wantKept(t, s, "x.example", 0, "", 2)
		wantIoC(t, s, "x.example", 20, []string{"new"}, t0.Add(2*day), t0.Add(2*day), t0.Add(3*day))
		sn, in, err := s.SweepExpired(ctx, t0.Add(2*day), 100)
		if err != nil || sn != 1 || in != 0 {
			t.Errorf("sweep = %d sightings, %d IoCs, %v; want 1, 0", sn, in, err)
		}
		wantSightings(t, s, "x.example", fmt.Sprintf("%d/s 20 [new] 48h0m0s 48h0m0s 72h0m0s", b))
	})
}

// A feed's deletion, its sweep and a snapshot's expiry of unseen values
// reach the IoCs whose one sighting is the feed's, in chunks.
func TestMaintenanceOfInlineSightings(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		var inds []ioc.Indicator
		for i := range 12 {
			inds = append(inds, dom(fmt.Sprintf("a%d.example", i), "list", 1))
		}
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: inds})
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(time.Hour), Retention: 3 * day, Indicators: []ioc.Indicator{
			dom("a0.example", "list", 1), dom("a1.example", "list", 1), dom("a2.example", "other", 1)}})
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("b.example", "list", 1)}})

		// Seen since: a0, a1 (inline) and a2 (rows, as "other" reported it too).
		removed, err := s.ExpireUnseen(ctx, a, "list", t0.Add(time.Hour))
		if err != nil || removed != 10 {
			t.Errorf("ExpireUnseen = %d, %v; want 10", removed, err)
		}
		if got := count(t, s, "iocs"); got != 4 {
			t.Errorf("%d IoCs after ExpireUnseen, want 4", got)
		}
		wantKept(t, s, "a2.example", 0, "", 1)

		// a0 and a1 expire at t0+1h+3d, b at t0+1d.
		sn, in, err := s.SweepExpired(ctx, t0.Add(2*day), 1)
		if err != nil || sn != 1 || in != 1 || iocExists(t, s, ioc.Domain, "b.example") {
			t.Errorf("sweep = %d, %d, %v; want 1, 1", sn, in, err)
		}
		if n, err := s.CountFeedIoCs(ctx, a); err != nil || n != 3 {
			t.Errorf("feed a counts %d IoCs, %v; want 3", n, err)
		}
		gone, err := s.DeleteFeedSightings(ctx, a)
		if err != nil || gone != 3 || count(t, s, "iocs") != 0 {
			t.Errorf("DeleteFeedSightings = %d, %v; %d IoCs left", gone, err, count(t, s, "iocs"))
		}
		wantIoCCount(t, s, 0)
	})
}

// Pages of a feed's IoCs and exports' sources read both places, in both of
// the feed filter's forms (probing each IoC, listing the feed's).
func TestReadsOfInlineSightings(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		var inds []ioc.Indicator
		for i := range 30 {
			inds = append(inds, dom(fmt.Sprintf("h%02d.example", i), "s", i))
		}
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: inds[:20]})
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: day, Indicators: inds[10:]})
		want := func(lo, hi int) []string {
			var out []string
			for i := lo; i < hi; i++ {
				out = append(out, fmt.Sprintf("h%02d.example", i))
			}
			return out
		}
		for _, c := range []struct {
			cap  int // the count cap: a small one makes SQLite probe each IoC
			feed int64
			want []string
		}{
			{0, a, want(0, 20)}, {1, a, want(0, 20)}, {0, b, want(10, 30)}, {1, b, want(10, 30)},
		} {
			s.IoCCountCap = c.cap
			got := pagedValues(t, s, store.IoCFilter{FeedID: c.feed}, store.IoCOrder{Field: store.IoCOrderValue}, 7, nil)
			if !slices.Equal(got, c.want) {
				t.Errorf("cap %d feed %d: %v, want %v", c.cap, c.feed, got, c.want)
			}
		}
		s.IoCCountCap = 0
		sources := map[string]string{}
		err := s.StreamIoCs(ctx, store.IoCFilter{}, store.IoCOrder{}, store.StreamColumns{WithSources: true}, func(r *store.IoCRow) error {
			sources[r.Value] = r.Sources
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if sources["h05.example"] != "TSV_a/s" || sources["h25.example"] != "TSV_b/s" || sources["h15.example"] != "TSV_a/s;TSV_b/s" {
			t.Errorf("sources: h05 %q, h25 %q, h15 %q", sources["h05.example"], sources["h25.example"], sources["h15.example"])
		}
	})
}

// Going down, the migration makes every inline sighting a row of the
// sightings table again; coming back up, they stay rows and new IoCs keep
// theirs inline.
func TestInlineSightingsMigration(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("x.example", "s", 1, "t"), dom("y.example", "s", 2)}})
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("y.example", "s", 3)}})
		before := slices.Concat(sightingsOf(t, s, "x.example"), sightingsOf(t, s, "y.example"))
		var mig *migrate.Migration
		for _, m := range migrations.Migrations.Sorted() {
			if m.Name == "20261229000100" {
				mig = &m
			}
		}
		if mig == nil {
			t.Fatal("no migration 20261229000100")
		}
		migrator := migrate.NewMigrator(s.DB, migrations.Migrations)
		if err := mig.Down(ctx, migrator, mig); err != nil {
			t.Fatal(err)
		}
		var rows int
		if err := s.DB.QueryRowContext(ctx, `SELECT count(*) FROM sightings WHERE ioc_id IN (SELECT id FROM iocs)`).Scan(&rows); err != nil || rows != 3 {
			t.Errorf("after down: %d sightings rows, %v; want 3", rows, err)
		}
		if _, err := s.DB.ExecContext(ctx, `SELECT feed_id FROM iocs`); err == nil {
			t.Error("iocs.feed_id is still there after down")
		}
		if err := mig.Up(ctx, migrator, mig); err != nil {
			t.Fatal(err)
		}
		wantKept(t, s, "x.example", 0, "", 1)
		if after := slices.Concat(sightingsOf(t, s, "x.example"), sightingsOf(t, s, "y.example")); !slices.Equal(after, before) {
			t.Errorf("sightings after down and up:\n %q\nwant %q", after, before)
		}
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("z.example", "s", 1)}})
		wantKept(t, s, "z.example", a, "s", 0)
	})
}

// The sweeper takes a feed's expired IoCs latest expiry first on
// PostgreSQL, earliest first on SQLite (deleteInline): IoCs written
// together expire together, and the first pages of FIRST_SEEN and
// LAST_SEEN DESC start at the newest.
func TestSweepTakesTheExpiredInTheDatabasesOrder(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		for n := range 4 {
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(n) * time.Hour), Retention: day,
				Indicators: []ioc.Indicator{dom(fmt.Sprintf("e%d.example", n), "src", 50, "t")}})
		}
		deleted, err := store.SweepInline(s, context.Background(), feed, t0.Add(2*day), 2)
		if err != nil || deleted != 2 {
			t.Fatalf("one batch of 2 deleted %d IoCs (%v), want 2", deleted, err)
		}
		first, last := "'e0.example', 'e1.example'", "'e2.example', 'e3.example'"
		if s.Dialect == store.Postgres {
			first, last = last, first
		}
		if n := countRows(t, s, "iocs WHERE value IN ("+first+")"); n != 0 {
			t.Errorf("%d of the two IoCs a batch of 2 takes first (%s) left, want none", n, first)
		}
		if n := countRows(t, s, "iocs WHERE value IN ("+last+")"); n != 2 {
			t.Errorf("%d of the two IoCs a batch of 2 leaves (%s) left, want both", n, last)
		}
	})
}
