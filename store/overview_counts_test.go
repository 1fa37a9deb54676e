package store_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// checkOverviewCounts fails the test when the counts the writers keep are
// not a recount of the IoCs after step, and when step changed no count (it
// would then test nothing). It returns the recount, for the next step.
func checkOverviewCounts(t *testing.T, s *store.Store, step string, before store.OverviewCounts) store.OverviewCounts {
	t.Helper()
	ctx := context.Background()
	kept, err := store.KeptOverviewCounts(ctx, s)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	recount, err := store.RecountOverview(ctx, s)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	if !reflect.DeepEqual(kept, recount) {
		t.Errorf("after %s the kept counts are not a recount:\n%s", step, countsDiff(kept, recount))
	}
	if reflect.DeepEqual(recount, before) {
		t.Fatalf("%s changed no count", step)
	}
	return recount
}

// countsDiff names the keys whose kept count differs from the recount.
func countsDiff(kept, recount store.OverviewCounts) string {
	var b strings.Builder
	diff := func(name string, kept, recount map[string]int64) {
		keys := map[string]bool{}
		for k := range kept {
			keys[k] = true
		}
		for k := range recount {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			k1, ok1 := kept[k]
			k2, ok2 := recount[k]
			if k1 != k2 || ok1 != ok2 {
				fmt.Fprintf(&b, "  %s %s: kept %d (row %v), recount %d\n", name, k, k1, ok1, k2)
			}
		}
	}
	str := func(m map[int64]int64) map[string]int64 {
		out := make(map[string]int64, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return out
	}
	diff("type", kept.Types, recount.Types)
	diff("feed", str(kept.Feeds), str(recount.Feeds))
	diff("tag", kept.Tags, recount.Tags)
	diff("day", str(kept.Days), str(recount.Days))
	diff("score", str(kept.Scores), str(recount.Scores))
	diff("kind:feed", kept.FeedKinds, recount.FeedKinds)
	diff("kind:tag", kept.TagKinds, recount.TagKinds)
	return b.String()
}

// The overview's counts follow every kind of write of IoCs and sightings,
// on both databases: after each, they equal a recount from the tables.
func TestOverviewCountsFollowEveryWriter(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		var counts store.OverviewCounts

		// New IoCs, each with its one sighting kept inline.
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 80, "emotet", "botnet"), dom("y.example", "s1", 10, "emotet"),
			dom("u.example", "s1", 30, "qakbot"), dom("v.example", "s1", 30, "v"),
			validUntil(dom("z.example", "s1", 50, "short"), t0.Add(2*day)),
			validUntil(dom("old.example", "s1", 50, "old"), t0.Add(time.Hour)),
			{Kind: ioc.IP, Value: "192.0.2.1", Source: "s1", Score: 60, Tags: []string{"scanner"}},
			{Kind: ioc.IP, Value: "192.0.2.2", Source: "s1", Score: 60},
			{Kind: ioc.IP, Value: "192.0.2.3", Source: "s1", Score: 60, Tags: []string{"scanner"}}}})
		counts = checkOverviewCounts(t, s, "new IoCs", counts)

		// Another feed's re-sightings: the inline sightings become rows,
		// tags are added and expiries move to other days.
		apply(t, s, store.Batch{FeedID: b, Now: t0.Add(time.Hour), Retention: 20 * day, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 20, "emotet", "loader"), dom("y.example", "s1", 20),
			validUntil(dom("u.example", "s1", 20, "b-only"), t0.Add(2*day)),
			validUntil(dom("v.example", "s1", 20), t0.Add(2*day+time.Hour)), dom("w.example", "s1", 20, "fresh"),
			// Counted per kind as well: b's IoCs are of two kinds.
			{Kind: ioc.IP, Value: "192.0.2.3", Source: "s1", Score: 60, Tags: []string{"scanner"}}}})
		counts = checkOverviewCounts(t, s, "re-sightings by another feed", counts)

		// The same feed re-sights with other tags: y loses emotet.
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(2 * time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("y.example", "s1", 10, "dridex"), validUntil(dom("v.example", "s1", 30, "v"), t0.Add(2*day))}})
		counts = checkOverviewCounts(t, s, "re-sightings with other tags", counts)

		// A re-sighting that moves the score alone: the inline IP's
		// tags and expiry day stay.
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(2*time.Hour + time.Minute), Retention: 10 * day, Indicators: []ioc.Indicator{
			{Kind: ioc.IP, Value: "192.0.2.2", Source: "s1", Score: 90}}})
		counts = checkOverviewCounts(t, s, "a re-sighting with another score", counts)

		// Revocations: x keeps b's sighting, the IP loses its only one.
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(3 * time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{
			{Kind: ioc.Domain, Value: "x.example", Source: "s1", Revoked: true},
			{Kind: ioc.IP, Value: "192.0.2.1", Source: "s1", Revoked: true}}})
		counts = checkOverviewCounts(t, s, "revocations", counts)

		// A batch that touches old.example, whose one sighting expired
		// unswept, deletes it as dead.
		apply(t, s, store.Batch{FeedID: b, Now: t0.Add(5 * time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{
			{Kind: ioc.Domain, Value: "old.example", Source: "s9", Revoked: true}}})
		counts = checkOverviewCounts(t, s, "a batch's dead IoC", counts)

		// The sweep: z (inline) goes, v's two rows go with it, u keeps
		// a's sighting but loses b's tag.
		if _, n, err := s.SweepExpired(ctx, t0.Add(3*day), 0); err != nil || n != 2 {
			t.Fatalf("sweep removed %d IoCs (%v), want 2", n, err)
		}
		counts = checkOverviewCounts(t, s, "sweep", counts)

		// A list's run that no longer holds what a saw before since.
		if _, err := s.ExpireUnseen(ctx, a, "s1", t0.Add(90*time.Minute)); err != nil {
			t.Fatal(err)
		}
		counts = checkOverviewCounts(t, s, "list expiry", counts)

		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(4 * day), Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("w.example", "s2", 40, "again"), dom("allowed.example", "s1", 40, "allowed"),
			dom("t.example", "s1", 40)}})
		counts = checkOverviewCounts(t, s, "more sightings", counts)

		if n, err := s.DeleteIoCsMatching(ctx, ioc.Domain, "%allowed%", func(string) bool { return true }); err != nil || n != 1 {
			t.Fatalf("allowlist removal deleted %d (%v), want 1", n, err)
		}
		counts = checkOverviewCounts(t, s, "allowlist removal", counts)

		if err := s.DeleteFeed(ctx, b); err != nil {
			t.Fatal(err)
		}
		counts = checkOverviewCounts(t, s, "feed removal", counts)
		if _, ok := counts.Feeds[b]; ok {
			t.Errorf("the deleted feed still counts: %+v", counts.Feeds)
		}
		if err := s.DeleteFeed(ctx, a); err != nil {
			t.Fatal(err)
		}
		checkOverviewCounts(t, s, "the last feed's removal", counts)
		if kept, err := store.KeptOverviewCounts(ctx, s); err != nil {
			t.Fatal(err)
		} else if len(kept.Types)+len(kept.Feeds)+len(kept.Tags)+len(kept.Days)+len(kept.FeedKinds)+len(kept.TagKinds) != 0 {
			t.Errorf("an empty store keeps counts: %+v", kept)
		}
	})
}

// The overview reads the kept counts: the top tags, and the week's expiry
// by day from today.
func TestOverviewReadsKeptCounts(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a := newFeed(t, s, "TSV_a")
		var inds []ioc.Indicator
		// Tag i on i+1 IoCs, expiring on day i%9 from t0's day.
		for i := range store.OverviewTopTags + 2 {
			for j := range i + 1 {
				ind := dom(fmt.Sprintf("d%d-%d.example", i, j), "s1", 10, fmt.Sprintf("tag%02d", i))
				ind.ValidUntil = t0.Add(time.Duration(i%9) * day)
				if i%9 == 0 {
					ind.ValidUntil = t0.Add(time.Hour)
				}
				inds = append(inds, ind)
			}
		}
		// Expired an hour before t0, not swept yet: today still counts it.
		unswept := dom("unswept.example", "s1", 10)
		unswept.ValidUntil = t0.Add(-time.Hour)
		apply(t, s, store.Batch{FeedID: a, Now: t0.Add(-2 * time.Hour), Retention: day, Indicators: append(inds, unswept)})
		o, err := s.ComputeOverview(ctx, t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.TopTags) != store.OverviewTopTags || o.TopTags[0] != (store.TagCount{Tag: "tag11", Count: 12}) ||
			o.TopTags[store.OverviewTopTags-1] != (store.TagCount{Tag: "tag02", Count: 3}) {
			t.Errorf("top tags %+v", o.TopTags)
		}
		// Days 0..6: tags i with i%9 == day, i < 12: day 0 has tag00 (1),
		// tag09 (10) and unswept.example; day 1 tag01 (2) and tag10 (11);
		// day 2 tag02 (3) and tag11 (12); then one tag each.
		want := []int64{12, 13, 15, 4, 5, 6, 7}
		for i, d := range o.Expiring {
			if d.Expiring != want[i] {
				t.Errorf("expiring on day %d: %d, want %d", i, d.Expiring, want[i])
			}
		}
		if o.Total != 79 || len(o.ByFeed) != 1 || o.ByFeed[0].Count != 79 {
			t.Errorf("total %d, by feed %+v, want 79", o.Total, o.ByFeed)
		}
	})
}

// checkCountsRefilled takes migration id down, checks that its count
// tables went, and up again, and checks that it filled the counts with a
// recount of the IoCs stored; it returns them.
func checkCountsRefilled(t *testing.T, s *store.Store, id string) store.OverviewCounts {
	t.Helper()
	ctx := context.Background()
	want, err := store.RecountOverview(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	m, mig := migration(t, s, id)
	if err := mig.Down(ctx, m, mig); err != nil {
		t.Fatal(err)
	}
	if _, err := store.KeptOverviewCounts(ctx, s); err == nil {
		t.Error("the count tables are still there after going down")
	}
	if err := mig.Up(ctx, m, mig); err != nil {
		t.Fatal(err)
	}
	got, err := store.KeptOverviewCounts(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("filled counts:\n%s", countsDiff(got, want))
	}
	return got
}

// Migration 20270110000100 fills the counts from the IoCs already stored,
// and goes down and up again.
func TestOverviewCountsMigrationFills(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 80, "emotet", "botnet"), dom("y.example", "s1", 10, "emotet"),
			{Kind: ioc.IP, Value: "192.0.2.1", Source: "s1", Score: 60, Tags: []string{"scanner"}}}})
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: 3 * day, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 20, "loader"), dom("w.example", "s1", 20)}})
		got := checkCountsRefilled(t, s, "20270110000100")
		if got.Types["domain"] != 3 || got.Feeds[a] != 3 || got.Feeds[b] != 2 || got.Tags["emotet"] != 2 {
			t.Errorf("filled counts %+v", got)
		}
	})
}

// Migration 20270118000100 fills the counts per feed and per tag of each
// kind from the IoCs already stored: inline sightings and rows (an IoC with
// two sources in one feed counted once), and tags that are a JSON null.
func TestKindCountsMigrationFills(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "TSV_a"), newFeed(t, s, "TSV_b")
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 80, "emotet", "botnet"), dom("x.example", "s2", 80, "emotet"), dom("y.example", "s1", 10, "emotet"),
			dom("n.example", "s1", 10),
			{Kind: ioc.IP, Value: "192.0.2.1", Source: "s1", Score: 60, Tags: []string{"scanner", "emotet"}}}})
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: 3 * day, Indicators: []ioc.Indicator{
			dom("x.example", "s1", 20, "loader"), {Kind: ioc.IP, Value: "192.0.2.2", Source: "s1", Score: 60}}})
		if _, err := s.DB.ExecContext(ctx, "UPDATE iocs SET tags = 'null' WHERE value = 'n.example'"); err != nil {
			t.Fatal(err)
		}
		got := checkCountsRefilled(t, s, "20270118000100")
		wantFeeds := map[string]int64{fmt.Sprintf("domain:%d", a): 3, fmt.Sprintf("ip:%d", a): 1, fmt.Sprintf("domain:%d", b): 1, fmt.Sprintf("ip:%d", b): 1}
		wantTags := map[string]int64{"domain:emotet": 2, "domain:botnet": 1, "domain:loader": 1, "ip:scanner": 1, "ip:emotet": 1}
		if !maps.Equal(got.FeedKinds, wantFeeds) || !maps.Equal(got.TagKinds, wantTags) {
			t.Errorf("filled per kind: feeds %v, tags %v; want %v, %v", got.FeedKinds, got.TagKinds, wantFeeds, wantTags)
		}
	})
}

// An IoC whose tags are a JSON null (what bun writes for a nil slice) has
// no tags, to the counts as to the tag keys: neither the migration's fill
// nor a writer that counts it (here the removal of its feed) fails on it.
func TestCountsTakeAJSONNullForNoTags(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("n.example", "s", 10), dom("t.example", "s", 10, "x")}})
		if _, err := s.DB.ExecContext(ctx, "UPDATE iocs SET tags = 'null' WHERE value = 'n.example'"); err != nil {
			t.Fatal(err)
		}
		m, mig := migration(t, s, "20270110000100")
		if err := mig.Down(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if err := mig.Up(ctx, m, mig); err != nil {
			t.Fatalf("filling the counts with an IoC whose tags are a JSON null: %v", err)
		}
		if kept, err := store.KeptOverviewCounts(ctx, s); err != nil || !reflect.DeepEqual(kept.Tags, map[string]int64{"x": 1}) {
			t.Fatalf("tag counts after the fill: %v, %v; want x once", kept.Tags, err)
		}
		if _, err := s.DeleteFeedSightings(ctx, feed); err != nil {
			t.Fatalf("removing the feed of an IoC whose tags are a JSON null: %v", err)
		}
		kept, err := store.KeptOverviewCounts(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(kept.Types) != 0 || len(kept.Tags) != 0 || len(kept.Days) != 0 {
			t.Errorf("counts after the only IoC went: %+v, want none", kept)
		}
	})
}
