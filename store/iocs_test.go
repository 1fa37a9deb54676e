package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// newFeed inserts a custom feed row for the IoC tests.
func newFeed(t testing.TB, s *store.Store, name string) int64 {
	t.Helper()
	now := time.Now()
	f := &store.Feed{Name: name, Type: store.FeedCustom, Category: "TSV", Enabled: true, StatusMessage: "Success",
		PollingFrequency: 24, RetentionPeriod: 30, CreatedAt: now, UpdatedAt: now}
	if _, err := s.DB.NewInsert().Model(f).Returning("id").Exec(context.Background()); err != nil {
		t.Fatalf("insert feed: %v", err)
	}
	return f.ID
}

func newRun(t testing.TB, s *store.Store, feedID int64) int64 {
	t.Helper()
	r := &store.FeedRun{FeedID: feedID, StartedAt: time.Now()}
	if _, err := s.DB.NewInsert().Model(r).Returning("id").Exec(context.Background()); err != nil {
		t.Fatalf("insert run: %v", err)
	}
	return r.ID
}

// validUntil is ind valid until at.
func validUntil(ind ioc.Indicator, at time.Time) ioc.Indicator {
	ind.ValidUntil = at
	return ind
}

func dom(value, source string, score int, tags ...string) ioc.Indicator {
	return ioc.Indicator{Kind: ioc.Domain, Value: value, Source: source, Score: score, Tags: tags}
}

func apply(t testing.TB, s *store.Store, b store.Batch) store.BatchResult {
	t.Helper()
	res, err := s.ApplyBatch(context.Background(), b)
	if err != nil {
		t.Fatalf("ApplyBatch: %v", err)
	}
	return res
}

func getIoC(t testing.TB, s *store.Store, kind ioc.Kind, value string) *store.IoC {
	t.Helper()
	var i store.IoC
	err := s.DB.NewSelect().Model(&i).Where("type = ? AND value = ?", kind, value).Scan(context.Background())
	if err != nil {
		t.Fatalf("IoC %s %s: %v", kind, value, err)
	}
	return &i
}

func iocExists(t testing.TB, s *store.Store, kind ioc.Kind, value string) bool {
	t.Helper()
	n, err := s.DB.NewSelect().Model((*store.IoC)(nil)).Where("type = ? AND value = ?", kind, value).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func count(t testing.TB, s *store.Store, table string) int {
	t.Helper()
	n, err := s.DB.NewSelect().Table(table).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// wantIoC checks the aggregates of one IoC.
func wantIoC(t testing.TB, s *store.Store, value string, score int, tags []string, first, last, expires time.Time) {
	t.Helper()
	i := getIoC(t, s, ioc.Domain, value)
	if i.Score != score || !slices.Equal(i.Tags, tags) || !i.FirstSeen.Equal(first) || !i.LastSeen.Equal(last) || !i.ExpiresAt.Equal(expires) {
		t.Errorf("%s = score %d tags %v first %v last %v expires %v;\n want score %d tags %v first %v last %v expires %v",
			value, i.Score, i.Tags, i.FirstSeen.UTC(), i.LastSeen.UTC(), i.ExpiresAt.UTC(), score, tags, first, last, expires)
	}
}

func TestApplyBatchAggregates(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")

		res := apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("x.example", "src1", 50, "t1"),
			dom("x.example", "src2", 70, "t2"),
			dom("x.example", "src1", 60, "t1"), // repeat in one batch: the last one wins
			dom("y.example", "src1", 10),
		}})
		if res.Stored != 3 || res.Removed != 0 {
			t.Errorf("result = %+v, want 3 stored", res)
		}
		if n := count(t, s, "iocs"); n != 2 {
			t.Errorf("iocs = %d, want 2 (one per value)", n)
		}
		if n := count(t, s, "sightings"); n != 3 {
			t.Errorf("sightings = %d, want 3 (one per feed and source)", n)
		}
		wantIoC(t, s, "x.example", 70, []string{"t1", "t2"}, t0, t0, t0.Add(10*day))
		wantIoC(t, s, "y.example", 10, []string{}, t0, t0, t0.Add(10*day))

		// Another feed reports x with a higher score and a longer retention.
		t1 := t0.Add(day)
		apply(t, s, store.Batch{FeedID: b, Now: t1, Retention: 30 * day, Indicators: []ioc.Indicator{dom("x.example", "other", 90, "t3", "t1")}})
		if n := count(t, s, "iocs"); n != 2 {
			t.Errorf("iocs = %d after a second feed, want 2", n)
		}
		wantIoC(t, s, "x.example", 90, []string{"t1", "t2", "t3"}, t0, t1, t1.Add(30*day))

		// Lowering a score recomputes the max over the other sightings.
		t2 := t0.Add(2 * day)
		apply(t, s, store.Batch{FeedID: b, Now: t2, Retention: 5 * day, Indicators: []ioc.Indicator{dom("x.example", "other", 20, "t3")}})
		wantIoC(t, s, "x.example", 70, []string{"t1", "t2", "t3"}, t0, t2, t0.Add(10*day))

		// An expiry of its own (STIX valid_until) overrides the retention.
		until := t0.Add(100 * day)
		in := dom("z.example", "s", 5)
		in.ValidUntil = until
		apply(t, s, store.Batch{FeedID: a, Now: t2, Retention: day, Indicators: []ioc.Indicator{in}})
		wantIoC(t, s, "z.example", 5, []string{}, t2, t2, until)

		// Already expired on arrival: nothing stored.
		old := dom("old.example", "s", 5)
		old.ValidUntil = t0
		if res := apply(t, s, store.Batch{FeedID: a, Now: t2, Retention: day, Indicators: []ioc.Indicator{old}}); res.Stored != 0 {
			t.Errorf("expired indicator stored: %+v", res)
		}
		if iocExists(t, s, ioc.Domain, "old.example") {
			t.Error("old.example stored although it expired before it arrived")
		}

		// An expired sighting of another feed no longer counts.
		t3 := t0.Add(11 * day) // a's sightings (t0 + 10 days) are expired, not yet swept
		apply(t, s, store.Batch{FeedID: b, Now: t3, Retention: day, Indicators: []ioc.Indicator{dom("x.example", "other", 30, "t3")}})
		wantIoC(t, s, "x.example", 30, []string{"t3"}, t1, t3, t3.Add(day))

		if n, err := s.CountFeedIoCs(context.Background(), a); err != nil || n != 3 {
			t.Errorf("CountFeedIoCs(a) = %d, %v; want 3", n, err)
		}
		if n, err := s.CountFeedIoCs(context.Background(), b); err != nil || n != 1 {
			t.Errorf("CountFeedIoCs(b) = %d, %v; want 1", n, err)
		}
	})
}

// An IoC's first sighting lends its tags to the IoC's aggregate until
// another sighting in the batch adds some: the union must not leak back
// into the first sighting's row.
func TestApplyBatchTagUnionLeavesEachSightingsTags(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "TSV_tags")
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("u.example", "s1", 10, "b", "a", "a"),
			dom("u.example", "s2", 20, "c"),
			dom("u.example", "s3", 30, "a"),
			dom("v.example", "s1", 40, "b", "a"),
		}})
		wantIoC(t, s, "u.example", 30, []string{"a", "b", "c"}, t0, t0, t0.Add(day))
		wantIoC(t, s, "v.example", 40, []string{"a", "b"}, t0, t0, t0.Add(day))
		rows, err := s.DB.QueryContext(context.Background(), `SELECT i.value, s.source, s.tags FROM sightings s
			JOIN iocs i ON i.id = s.ioc_id ORDER BY i.value, s.source`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var value, source, tags string
			if err := rows.Scan(&value, &source, &tags); err != nil {
				t.Fatal(err)
			}
			got = append(got, value+" "+source+" "+strings.ReplaceAll(tags, " ", ""))
		}
		want := []string{`u.example s1 ["a","b"]`, `u.example s2 ["c"]`, `u.example s3 ["a"]`, `v.example s1 ["a","b"]`}
		if !slices.Equal(got, want) {
			t.Errorf("sightings = %q, want %q", got, want)
		}
	})
}

func TestApplyBatchRevoked(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 80, "a"), dom("x.example", "s2", 40, "b"), dom("y.example", "s1", 10),
		}})
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: 10 * day, Indicators: []ioc.Indicator{dom("y.example", "s1", 20)}})

		rx, ry := dom("x.example", "s1", 0), dom("y.example", "s1", 0)
		rx.Revoked, ry.Revoked = true, true
		nx := dom("never.example", "s1", 0)
		nx.Revoked = true
		res := apply(t, s, store.Batch{FeedID: a, Now: t0.Add(day), Retention: day, Indicators: []ioc.Indicator{rx, ry, nx}})
		if res.Removed != 2 || res.Stored != 0 {
			t.Errorf("result = %+v, want 2 removed", res)
		}
		wantIoC(t, s, "x.example", 40, []string{"b"}, t0, t0, t0.Add(10*day))
		wantIoC(t, s, "y.example", 20, []string{}, t0, t0, t0.Add(10*day)) // b's sighting only
		if iocExists(t, s, ioc.Domain, "never.example") {
			t.Error("revoking an unknown value created it")
		}

		// Revoking the last sighting deletes the IoC.
		rx2 := dom("x.example", "s2", 0)
		rx2.Revoked = true
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(day), Retention: day, Indicators: []ioc.Indicator{rx2}})
		if iocExists(t, s, ioc.Domain, "x.example") {
			t.Error("x.example kept without a sighting")
		}

		// A revocation followed by a report in the same batch stores it.
		back := dom("x.example", "s2", 33)
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(2 * day), Retention: day, Indicators: []ioc.Indicator{rx2, back}})
		wantIoC(t, s, "x.example", 33, []string{}, t0.Add(2*day), t0.Add(2*day), t0.Add(3*day))
	})
}

func TestApplyBatchCursorAndRunCommitWithData(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a := newFeed(t, s, "TSV_a")
		run := newRun(t, s, a)
		cursor := "line:2"
		res := apply(t, s, store.Batch{FeedID: a, RunID: run, Now: t0, Retention: day, Cursor: &cursor,
			Indicators: []ioc.Indicator{dom("x.example", "s", 1), dom("y.example", "s", 1)}})
		if res.Stored != 2 {
			t.Fatalf("stored = %d", res.Stored)
		}
		var f store.Feed
		if err := s.DB.NewSelect().Model(&f).Where("id = ?", a).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if f.Cursor != "line:2" || f.LastIngestion == nil || !f.LastIngestion.Equal(t0) {
			t.Errorf("feed cursor %q last ingestion %v, want line:2 and %v", f.Cursor, f.LastIngestion, t0)
		}
		var r store.FeedRun
		if err := s.DB.NewSelect().Model(&r).Where("id = ?", run).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if r.Stored != 2 {
			t.Errorf("run stored = %d, want 2", r.Stored)
		}

		// A cursor alone moves the cursor and nothing else.
		end := ""
		apply(t, s, store.Batch{FeedID: a, RunID: run, Now: t0.Add(day), Cursor: &end})
		if err := s.DB.NewSelect().Model(&f).Where("id = ?", a).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if f.Cursor != "" || !f.LastIngestion.Equal(t0) {
			t.Errorf("after an empty checkpoint: cursor %q last ingestion %v", f.Cursor, f.LastIngestion)
		}

		// A batch that fails leaves neither data nor cursor behind.
		bad := "line:9"
		_, err := s.ApplyBatch(ctx, store.Batch{FeedID: a + 1000, Now: t0, Retention: day, Cursor: &bad,
			Indicators: []ioc.Indicator{dom("z.example", "s", 1)}})
		if err == nil {
			t.Fatal("batch for a missing feed succeeded")
		}
		if iocExists(t, s, ioc.Domain, "z.example") {
			t.Error("z.example stored by a failed batch")
		}

		tests := map[string]struct {
			batch store.Batch
			want  string
		}{
			"score above 100": {store.Batch{FeedID: a, Now: t0, Retention: day, Cursor: &bad, Indicators: []ioc.Indicator{dom("z.example", "s", 101)}}, "score"},
			"unknown kind":    {store.Batch{FeedID: a, Now: t0, Retention: day, Cursor: &bad, Indicators: []ioc.Indicator{{Kind: "cve", Value: "x"}}}, "unknown kind"},
			"empty value":     {store.Batch{FeedID: a, Now: t0, Retention: day, Cursor: &bad, Indicators: []ioc.Indicator{dom("", "s", 1)}}, "empty"},
			"no retention":    {store.Batch{FeedID: a, Now: t0, Cursor: &bad, Indicators: []ioc.Indicator{dom("z.example", "s", 1)}}, "retention"},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				_, err := s.ApplyBatch(ctx, tc.batch)
				var ve *store.ValidationError
				if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err = %v, want a validation error about %s", err, tc.want)
				}
			})
		}
		if err := s.DB.NewSelect().Model(&f).Where("id = ?", a).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if f.Cursor != "" || iocExists(t, s, ioc.Domain, "z.example") {
			t.Errorf("a refused batch changed the store: cursor %q", f.Cursor)
		}
	})
}

func TestApplyBatchManyKinds(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		a := newFeed(t, s, "TSV_a")
		var inds []ioc.Indicator
		for i := range 2500 { // more than one statement's worth on SQLite
			inds = append(inds,
				ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("10.0.%d.%d", i/256, i%256), Source: "s", Score: i % 101, Tags: []string{"emerging_threat"}},
				ioc.Indicator{Kind: ioc.Domain, Value: fmt.Sprintf("h%d.example", i), Source: "s", Score: 1},
			)
		}
		// The same value as an IP and as a URL is two IoCs.
		inds = append(inds, ioc.Indicator{Kind: ioc.URL, Value: "http://10.0.0.1/", Source: "s", Score: 1})
		if res := apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: inds}); res.Stored != 5001 {
			t.Errorf("stored = %d, want 5001", res.Stored)
		}
		if n := count(t, s, "iocs"); n != 5001 {
			t.Errorf("iocs = %d, want 5001", n)
		}
		// Applying the same batch again changes counts by nothing.
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(time.Hour), Retention: day, Indicators: inds})
		if n := count(t, s, "sightings"); n != 5001 {
			t.Errorf("sightings = %d after a repeat, want 5001", n)
		}
		i := getIoC(t, s, ioc.IP, "10.0.1.4")
		if i.Score != 260%101 || !slices.Equal(i.Tags, []string{"emerging_threat"}) || !i.FirstSeen.Equal(t0) || !i.LastSeen.Equal(t0.Add(time.Hour)) {
			t.Errorf("10.0.1.4 = %+v", i)
		}
	})
}

func TestDeleteFeedSightings(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		var inds []ioc.Indicator
		for i := range 6000 { // more than one deletion transaction
			inds = append(inds, dom(fmt.Sprintf("h%d.example", i), "s", 90, "from-a"))
		}
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: 10 * day, Indicators: inds})
		apply(t, s, store.Batch{FeedID: b, Now: t0.Add(day), Retention: day, Indicators: []ioc.Indicator{
			dom("h1.example", "s", 10, "from-b"), dom("b-only.example", "s", 10)}})

		removed, err := s.DeleteFeedSightings(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if removed != 5999 {
			t.Errorf("removed IoCs = %d, want 5999 (h1 is kept by feed b)", removed)
		}
		if n := count(t, s, "iocs"); n != 2 {
			t.Errorf("iocs left = %d, want 2", n)
		}
		wantIoC(t, s, "h1.example", 10, []string{"from-b"}, t0.Add(day), t0.Add(day), t0.Add(2*day))
		if n, _ := s.CountFeedIoCs(ctx, a); n != 0 {
			t.Errorf("feed a still counts %d IoCs", n)
		}
		if removed, err := s.DeleteFeedSightings(ctx, a); err != nil || removed != 0 {
			t.Errorf("second delete = %d, %v", removed, err)
		}
	})
}

func TestSweepExpired(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("shared.example", "s", 90, "a"), dom("a1.example", "s", 1), dom("a2.example", "s", 1), dom("a3.example", "s", 1),
			dom("a3.example", "s2", 1)}})
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: 5 * day, Indicators: []ioc.Indicator{
			dom("shared.example", "s", 20, "b"), dom("b1.example", "s", 1)}})

		// Nothing expired yet.
		if sn, in, err := s.SweepExpired(ctx, t0.Add(time.Hour), 2); err != nil || sn != 0 || in != 0 {
			t.Fatalf("early sweep = %d, %d, %v", sn, in, err)
		}
		sn, in, err := s.SweepExpired(ctx, t0.Add(2*day), 2)
		if err != nil {
			t.Fatal(err)
		}
		if sn != 5 || in != 3 {
			t.Errorf("sweep = %d sightings, %d IoCs; want 5 and 3", sn, in)
		}
		wantIoC(t, s, "shared.example", 20, []string{"b"}, t0, t0, t0.Add(5*day))
		if !iocExists(t, s, ioc.Domain, "b1.example") || iocExists(t, s, ioc.Domain, "a1.example") {
			t.Error("wrong IoCs swept")
		}
		sn, in, err = s.SweepExpired(ctx, t0.Add(6*day), 100)
		if err != nil || sn != 2 || in != 2 || count(t, s, "iocs") != 0 {
			t.Errorf("final sweep = %d, %d, %v; iocs left %d", sn, in, err, count(t, s, "iocs"))
		}
	})
}

func TestSweepExpiredCatchesOrphans(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b, c := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b"), newFeed(t, s, "TSV_c")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("x.example", "s", 1), dom("y.example", "s", 1)}})
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: 3 * day, Indicators: []ioc.Indicator{dom("y.example", "s", 1)}})
		apply(t, s, store.Batch{FeedID: c, Now: t0, Retention: 2 * day, Indicators: []ioc.Indicator{dom("z.example", "s", 1)}})
		// Deleting feed b's sightings by hand (an old database's cascade
		// from the feed's row did it; neither has that key now) skips the
		// recomputing: y keeps a stale expiry of t0 + 3 days.
		storetest.MustExec(t, s, "DELETE FROM sighting_rows WHERE feed_id = ?", b)
		storetest.MustExec(t, s, "DELETE FROM feeds WHERE id = ?", b)
		// z's one sighting is in its row: its feed's row goes alone, and
		// no feed's sweep finds it.
		storetest.MustExec(t, s, "DELETE FROM feeds WHERE id = ?", c)
		if _, _, err := s.SweepExpired(ctx, t0.Add(4*day), 10); err != nil {
			t.Fatal(err)
		}
		if n := count(t, s, "iocs"); n != 0 {
			t.Errorf("iocs left = %d, want 0", n)
		}
	})
}

// A feed row deleted without DeleteFeedSightings (by hand, or by an older
// build) leaves its sightings behind; no foreign key takes them. The
// sweeper deletes them as deleting the feed would have, live or expired,
// in batches, with the IoCs they leave without a sighting, and recomputes
// the others from what remains.
func TestSweepExpiredTakesTheSightingsOfGoneFeeds(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b, c := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b"), newFeed(t, s, "TSV_c")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("x.example", "s", 10, "a"), dom("y.example", "s", 10, "a")}})
		inds := []ioc.Indicator{dom("y.example", "s", 90, "b")}
		for i := range 5 { // more than a batch of 2
			inds = append(inds, dom(fmt.Sprintf("b%d.example", i), "s", 50))
		}
		apply(t, s, store.Batch{FeedID: b, Now: t0.Add(time.Hour), Retention: 3 * day, Indicators: inds})
		apply(t, s, store.Batch{FeedID: c, Now: t0.Add(time.Hour), Retention: 3 * day, Indicators: []ioc.Indicator{dom("c.example", "s", 50)}})
		storetest.MustExec(t, s, "DELETE FROM feeds WHERE id IN (?, ?)", b, c)

		// Nothing expired: only the gone feeds' sightings go.
		sn, in, err := s.SweepExpired(ctx, t0.Add(2*time.Hour), 2)
		if err != nil {
			t.Fatal(err)
		}
		if sn != 7 || in != 6 {
			t.Errorf("sweep = %d sightings, %d IoCs; want 7 and 6", sn, in)
		}
		if n := count(t, s, "iocs"); n != 2 {
			t.Errorf("iocs left = %d, want x and y", n)
		}
		wantIoC(t, s, "y.example", 10, []string{"a"}, t0, t0, t0.Add(day))
		if n := count(t, s, "sightings"); n != 2 {
			t.Errorf("sightings left = %d, want feed a's 2", n)
		}
		if st, err := s.IoCStats(ctx); err != nil || st.Count != 2 {
			t.Errorf("ioc count %d, %v; want 2", st.Count, err)
		}
		// And what is left expires as usual.
		if _, in, err := s.SweepExpired(ctx, t0.Add(2*day), 2); err != nil || in != 2 || count(t, s, "iocs") != 0 {
			t.Errorf("second sweep removed %d IoCs, %v; %d left", in, err, count(t, s, "iocs"))
		}
	})
}

// TestBatchOfNewIoCsThenAKnownOne checks the batches after a run of new IoCs
// (on PostgreSQL they copy without looking first): a batch holding a stored
// IoC among new ones stores the new ones once, updates the stored one from
// all its sightings, and the IoCs after it still get ids of their own.
func TestBatchOfNewIoCsThenAKnownOne(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("x.example", "s", 10), dom("y.example", "s", 10)}})
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{dom("z.example", "s", 10)}})
		// w sorts before x: a copy without looking would store w, then
		// fail on x.
		res := apply(t, s, store.Batch{FeedID: b, Now: t0.Add(time.Hour), Retention: 3 * day,
			Indicators: []ioc.Indicator{dom("w.example", "s", 90, "new"), dom("x.example", "s", 90, "seen-by-b"), dom("zz.example", "s", 20)}})
		if res.Added != 3 || res.Stored != 3 {
			t.Errorf("result %+v, want 3 added and stored (three sightings new to feed b)", res)
		}
		if n := count(t, s, "iocs"); n != 5 {
			t.Errorf("%d IoCs, want 5", n)
		}
		if n := count(t, s, "sightings"); n != 6 {
			t.Errorf("%d sightings, want 6", n)
		}
		x := getIoC(t, s, ioc.Domain, "x.example")
		if x.Score != 90 || !slices.Equal(x.Tags, []string{"seen-by-b"}) || !x.ExpiresAt.Equal(t0.Add(time.Hour+3*day)) || !x.FirstSeen.Equal(t0) {
			t.Errorf("x = score %d tags %v first %v expires %v; want the merge of both feeds' sightings", x.Score, x.Tags, x.FirstSeen, x.ExpiresAt)
		}
		ids := map[int64]string{}
		for _, v := range []string{"w.example", "x.example", "y.example", "z.example", "zz.example"} {
			i := getIoC(t, s, ioc.Domain, v)
			if other, dup := ids[i.ID]; dup {
				t.Errorf("%s and %s share id %d", v, other, i.ID)
			}
			ids[i.ID] = v
		}
		// And the next batch of new IoCs after it.
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(2 * time.Hour), Retention: day, Indicators: []ioc.Indicator{dom("v.example", "s", 10), dom("zzz.example", "s", 10)}})
		if n := count(t, s, "iocs"); n != 7 {
			t.Errorf("%d IoCs after the last batch, want 7", n)
		}
	})
}
