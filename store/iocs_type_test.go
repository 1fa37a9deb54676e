package store_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// A filtered page in type order past the count cap is read kind after
// kind, each kind in the filter's id order or read whole
// (pageOfEachKind): its pages, in both directions, for every kind of
// filter, follow the IoCs ordered by kind and id, whichever way reads each
// kind, before the keys are made and after, and a page's cursor carries
// over from one kind to the next. Some kinds have none of a filter's IoCs,
// which the pages in type and value order skip by the kept counts.
func TestFilteredPagesInTypeOrder(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feedA, feedB := newFeed(t, s, "a"), newFeed(t, s, "b")
		inB := map[string]bool{}
		// Batches of every kind, so that ids interleave the kinds. Feed A
		// brings domains, IPs and MD5s, feed B SHA-256s, URLs, one SHA-1
		// and some of A's domains; only hashes are tagged "hash".
		for b := range 4 {
			now := t0.Add(time.Duration(b) * time.Minute)
			retention := time.Duration(10+b) * day
			var a, fromB []ioc.Indicator
			for i := b * 6; i < b*6+6; i++ {
				tags := []string{}
				if i%2 == 1 {
					tags = append(tags, "odd")
				}
				hashTags := append(slices.Clone(tags), "hash")
				score := i % 7 * 15
				a = append(a,
					ioc.Indicator{Kind: ioc.Domain, Value: fmt.Sprintf("d%02d.example", i), Score: score, Tags: tags},
					ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("10.0.0.%d", i), Score: score, Tags: tags},
					ioc.Indicator{Kind: ioc.MD5, Value: fmt.Sprintf("%032x", i), Score: score, Tags: hashTags})
				fromB = append(fromB,
					ioc.Indicator{Kind: ioc.SHA256, Value: fmt.Sprintf("%064x", i), Score: score, Tags: hashTags},
					ioc.Indicator{Kind: ioc.URL, Value: fmt.Sprintf("http://u%02d.example/x", i), Score: score, Tags: tags})
				if i%3 == 0 {
					fromB = append(fromB, ioc.Indicator{Kind: ioc.Domain, Value: fmt.Sprintf("d%02d.example", i), Score: score, Tags: tags})
				}
			}
			if b == 2 {
				fromB = append(fromB, ioc.Indicator{Kind: ioc.SHA1, Value: fmt.Sprintf("%040x", 7), Score: 90, Tags: []string{"odd", "hash"}})
			}
			for _, batch := range []struct {
				feed int64
				inds []ioc.Indicator
			}{{feedA, a}, {feedB, fromB}} {
				for i := range batch.inds {
					batch.inds[i].Source = "src"
					if batch.feed == feedB {
						inB[batch.inds[i].Value] = true
					}
				}
				apply(t, s, store.Batch{FeedID: batch.feed, Now: now, Retention: retention, Indicators: batch.inds})
			}
		}
		type row struct {
			ID      int64  `bun:"id"`
			Type    string `bun:"type"`
			Value   string `bun:"value"`
			Score   int    `bun:"score"`
			Tags    string `bun:"tags"`
			Expires int64  `bun:"expires_at"`
		}
		var all []row
		if err := s.DB.NewSelect().Table("iocs").Column("id", "type", "value", "score", "tags", "expires_at").Scan(ctx, &all); err != nil {
			t.Fatalf("read iocs: %v", err)
		}
		has := func(tag string) func(row) bool {
			return func(r row) bool {
				var tags []string
				if err := json.Unmarshal([]byte(r.Tags), &tags); err != nil {
					t.Fatalf("tags of %s: %v", r.Value, err)
				}
				return slices.Contains(tags, tag)
			}
		}
		mid := t0.Add(11*day + 90*time.Second)
		cases := []struct {
			name   string
			filter store.IoCFilter
			keep   func(row) bool
		}{
			{"odd", store.IoCFilter{Tag: "odd"}, has("odd")},
			{"hash (three kinds)", store.IoCFilter{Tag: "hash"}, has("hash")},
			{"feed B", store.IoCFilter{FeedID: feedB}, func(r row) bool { return inB[r.Value] }},
			{"feed A", store.IoCFilter{FeedID: feedA}, func(r row) bool { return r.Type == "domain" || r.Type == "ip" || r.Type == "md5" }},
			{"min score 45", store.IoCFilter{MinScore: ptr(45)}, func(r row) bool { return r.Score >= 45 }},
			{"expires after", store.IoCFilter{ExpiresAfter: &mid}, func(r row) bool { return r.Expires > mid.UnixMicro() }},
			{"expires before", store.IoCFilter{ExpiresBefore: &mid}, func(r row) bool { return r.Expires < mid.UnixMicro() }},
			{"md5 and domains", store.IoCFilter{Types: []ioc.Kind{ioc.MD5, ioc.Domain}},
				func(r row) bool { return r.Type == "md5" || r.Type == "domain" }},
			{"IPs, odd", store.IoCFilter{Types: []ioc.Kind{ioc.IP}, Tag: "odd"}, func(r row) bool { return r.Type == "ip" && has("odd")(r) }},
			{"odd, min score 45", store.IoCFilter{Tag: "odd", MinScore: ptr(45)}, func(r row) bool { return r.Score >= 45 && has("odd")(r) }},
			{"search 1", store.IoCFilter{Search: "1"}, func(r row) bool { return strings.Contains(r.Value, "1") }},
		}
		check := func(state string) {
			t.Helper()
			savedSparse, savedCap := *store.SparseKeys, s.IoCCountCap
			defer func() { *store.SparseKeys, s.IoCCountCap = savedSparse, savedCap }()
			s.IoCCountCap = 3
			ways := map[string][2]bool{"by size": {true, true}, "walked": {true, false}, "whole": {false, true}}
			for _, sparse := range []int{savedSparse, 1} {
				*store.SparseKeys = sparse
				for _, c := range cases {
					for _, desc := range []bool{false, true} {
						var want []int64
						for _, r := range slices.SortedFunc(slices.Values(all), func(a, b row) int {
							if desc {
								a, b = b, a
							}
							return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.ID, b.ID))
						}) {
							if c.keep(r) {
								want = append(want, r.ID)
							}
						}
						if len(want) <= 3 {
							t.Fatalf("%s: %d IoCs, want more than the cap", c.name, len(want))
						}
						for way, takes := range ways {
							restore := store.KindWays(takes[0], takes[1])
							got := pagedIDs(t, s, c.filter, store.IoCOrder{Field: store.IoCOrderType, Desc: desc}, 4, func(page *store.IoCPage) {
								if page.Total != 3 || !page.TotalCapped {
									t.Errorf("%s, %s, sparse %d, desc %v, %s: total %d capped %v, want 3 capped",
										state, c.name, sparse, desc, way, page.Total, page.TotalCapped)
								}
							})
							restore()
							if !slices.Equal(got, want) {
								t.Errorf("%s, %s, sparse %d, desc %v, %s: pages\n got %v\nwant %v", state, c.name, sparse, desc, way, got, want)
							}
						}
						want = want[:0]
						for _, r := range slices.SortedFunc(slices.Values(all), func(a, b row) int {
							if desc {
								a, b = b, a
							}
							return cmp.Or(strings.Compare(a.Value, b.Value), cmp.Compare(a.ID, b.ID))
						}) {
							if c.keep(r) {
								want = append(want, r.ID)
							}
						}
						got := pagedIDs(t, s, c.filter, store.IoCOrder{Field: store.IoCOrderValue, Desc: desc}, 4, nil)
						if !slices.Equal(got, want) {
							t.Errorf("%s, %s, sparse %d, desc %v, in value order: pages\n got %v\nwant %v", state, c.name, sparse, desc, got, want)
						}
					}
				}
			}
		}
		check("before the keys")
		catchUpAll(t, s.CatchUpKeys, 1000)
		check("keys caught up")
	})
}
