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

// A batch large enough to take several chunks of every copy (new IoCs, new
// sightings, and on a second batch the staging of known ones) stores each
// column as given: ids, non-ASCII values and sources, tags, times. The
// sightings come in an order other than their IoCs' so that the writer's
// reordering is exercised.
func TestBatchCopiesEveryColumn(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "TSV_copy")
		const n = 3000
		long := strings.Repeat("ü", 40) // 80 bytes: 3,000 rows pass 64 KB
		var inds []ioc.Indicator
		for i := n - 1; i >= 0; i-- {
			ind := ioc.Indicator{Kind: ioc.Domain, Value: fmt.Sprintf("h%04d-%s.example", i, long),
				Source: fmt.Sprintf("src-é-%d", i%3), Score: i % 101, Tags: []string{fmt.Sprintf("t%d", i%4), "ü-tag"}}
			if i%7 == 0 {
				ind.ValidUntil = t0.Add(time.Duration(i+2) * time.Hour)
			}
			inds = append(inds, ind)
			if i%10 == 0 { // a second source of the same IoC
				second := ind
				second.Source, second.Score, second.Tags = "other", 100-i%101, nil
				inds = append(inds, second)
			}
		}
		res := apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 10 * day, Indicators: inds})
		if res.Stored != len(inds) || res.Added != len(inds) {
			t.Fatalf("first batch: %+v, want %d stored and added", res, len(inds))
		}
		check := func(now time.Time) {
			t.Helper()
			type sighting struct {
				iocID   int64
				source  string
				score   int
				tags    string
				expires time.Time
			}
			var got []sighting
			rows, err := s.DB.QueryContext(ctx, `SELECT ioc_id, source, score, tags, expires_at FROM sightings WHERE feed_id = ?`, feed)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var sg sighting
				var exp int64
				if err := rows.Scan(&sg.iocID, &sg.source, &sg.score, &sg.tags, &exp); err != nil {
					t.Fatal(err)
				}
				sg.expires = time.UnixMicro(exp).UTC()
				got = append(got, sg)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(inds) {
				t.Fatalf("%d sightings, want %d", len(got), len(inds))
			}
			bySource := map[string]sighting{}
			ids := map[int64]string{}
			for _, sg := range got {
				i := getIoCByID(t, s, sg.iocID)
				ids[sg.iocID] = i.Value
				bySource[i.Value+"|"+sg.source] = sg
			}
			if len(ids) != n {
				t.Fatalf("sightings name %d IoCs, want %d", len(ids), n)
			}
			for _, ind := range inds {
				sg, ok := bySource[ind.Value+"|"+ind.Source]
				if !ok {
					t.Fatalf("no sighting of %s from %s", ind.Value, ind.Source)
				}
				exp := now.Add(10 * day)
				if !ind.ValidUntil.IsZero() {
					exp = ind.ValidUntil
				}
				tags := slices.Clone(ind.Tags)
				slices.Sort(tags)
				wantTags := "[]"
				if len(tags) > 0 {
					wantTags = `["` + strings.Join(tags, `", "`) + `"]`
				}
				if s.Dialect == store.SQLite {
					wantTags = strings.ReplaceAll(wantTags, `", "`, `","`)
				}
				if sg.score != ind.Score || sg.tags != wantTags || !sg.expires.Equal(exp) {
					t.Fatalf("sighting of %s from %s = score %d tags %s expires %v; want %d %s %v",
						ind.Value, ind.Source, sg.score, sg.tags, sg.expires, ind.Score, wantTags, exp)
				}
			}
			// The IoC of a value with two sources has both sightings'
			// aggregates.
			i := getIoC(t, s, ioc.Domain, fmt.Sprintf("h%04d-%s.example", 10, long))
			if i.Score != 90 || !slices.Equal(i.Tags, []string{"t2", "ü-tag"}) || !i.LastSeen.Equal(now) || !i.FirstSeen.Equal(t0) {
				t.Fatalf("h0010 = score %d tags %v first %v last %v", i.Score, i.Tags, i.FirstSeen, i.LastSeen)
			}
		}
		check(t0)
		// Again, an hour later: every IoC and sighting is known now.
		t1 := t0.Add(time.Hour)
		res = apply(t, s, store.Batch{FeedID: feed, Now: t1, Retention: 10 * day, Indicators: inds})
		if res.Stored != len(inds) || res.Added != 0 {
			t.Fatalf("second batch: %+v, want %d stored, none added", res, len(inds))
		}
		check(t1)
	})
}

func getIoCByID(t testing.TB, s *store.Store, id int64) *store.IoC {
	t.Helper()
	var i store.IoC
	if err := s.DB.NewSelect().Model(&i).Where("id = ?", id).Scan(context.Background()); err != nil {
		t.Fatalf("IoC %d: %v", id, err)
	}
	return &i
}

// A copy PostgreSQL refuses part way (text it cannot hold) fails its batch
// whole, and the connection serves the next batch.
func TestBatchCopyFailureLeavesNothing(t *testing.T) {
	s := storetest.NewPostgres(t)
	feed := newFeed(t, s, "TSV_copy_fail")
	var inds []ioc.Indicator
	for i := range 5000 {
		inds = append(inds, dom(fmt.Sprintf("fail-%05d.example", i), "src", 50))
	}
	inds[4000].Value = "bad-\xff.example"
	if _, err := s.ApplyBatch(context.Background(), store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: inds}); err == nil {
		t.Fatal("a batch with invalid UTF-8 was stored")
	}
	if n := count(t, s, "iocs"); n != 0 {
		t.Fatalf("%d IoCs left by the failed batch", n)
	}
	inds[4000].Value = "good.example"
	if res := apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: inds}); res.Stored != len(inds) {
		t.Fatalf("after the failure: %+v", res)
	}
	if n := count(t, s, "sightings"); n != len(inds) {
		t.Fatalf("%d sightings, want %d", n, len(inds))
	}
}
