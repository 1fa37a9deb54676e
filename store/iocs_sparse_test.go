package store_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestSparseValuePagesAcrossKinds pages a tag in value order, both ways,
// where each kind holds the tag differently: most IPs, domains and
// hashes rarely and at their far ends, the hashes' values sorting before
// every IP. A walk of each kind's values within a small share then stops
// short of some kinds' matches, whose last walked value (edge) must bound
// the page (boundedValueWalk on PostgreSQL; on SQLite the race's ways).
func TestSparseValuePagesAcrossKinds(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "kinds")
		var inds []ioc.Indicator
		var want []string
		for i := range 40 {
			ip := fmt.Sprintf("10.0.%d.%d", i/10, i%10)
			tags := []string{}
			if i%5 != 4 {
				tags = append(tags, "mixed")
				want = append(want, ip)
			}
			inds = append(inds, ioc.Indicator{Kind: ioc.IP, Value: ip, Source: "src", Score: 50, Tags: tags})
			d := fmt.Sprintf("d%02d.example", i)
			if i >= 37 {
				inds = append(inds, dom(d, "src", 50, "mixed"))
				want = append(want, d)
			} else {
				inds = append(inds, dom(d, "src", 50))
			}
			hash := ioc.Indicator{Kind: ioc.MD5, Value: fmt.Sprintf("%032x", i), Source: "src", Score: 50}
			if i >= 37 {
				hash.Tags = []string{"mixed"}
				want = append(want, hash.Value)
			}
			inds = append(inds, hash)
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 10 * 24 * time.Hour, Indicators: inds})
		catchUpAll(t, s.CatchUpKeys, 1000)
		slices.Sort(want)
		for _, desc := range []bool{false, true} {
			expected := slices.Clone(want)
			if desc {
				slices.Reverse(expected)
			}
			for _, bound := range []int{2, 5, 13, 1000} {
				for name, way := range map[string][2]bool{"raced": {true, true}, "walked": {true, false}, "read": {false, true}} {
					restoreWays, restoreBound := store.SparseWays(way[0], way[1], 0, 1<<30), store.SparseWalkBound(bound)
					for _, size := range []int{2, 3, 7} {
						got := pagedValues(t, s, store.IoCFilter{Tag: "mixed"}, store.IoCOrder{Field: store.IoCOrderValue, Desc: desc}, size, nil)
						if !slices.Equal(got, expected) {
							t.Errorf("desc %v, bound %d, %s, pages of %d:\n got  %s\n want %s", desc, bound, name, size,
								strings.Join(got, " "), strings.Join(expected, " "))
						}
					}
					restoreBound()
					restoreWays()
				}
			}
		}
	})
}

// TestSparseWalkRows checks when PostgreSQL walks a sparse find's page
// rather than reading its keys, and how far: a page of matches spread
// evenly within the bound with half as much again to spare, and the walk
// never longer than twice the keys, whose read follows a walk that fails.
func TestSparseWalkRows(t *testing.T) {
	for _, c := range []struct {
		name        string
		limit       int
		stored      int64
		keys, bound int
		walk        bool
	}{
		{"a tag of 1 % at 1,000,000", 101, 1_000_000, 10_000, 15_150, true},
		{"a tag of 1 % at 3,000,000", 101, 3_000_000, 30_000, 15_150, true},
		{"a common tag: half the keys", 101, 1_000_000, 40_000, 20_000, true},
		{"half as much again within twice the keys", 101, 1_320_099, 10_000, 19_999, true},
		{"just past it", 101, 1_320_100, 10_000, 20_000, false},
		{"a tag of 0.1 %", 101, 10_000_000, 10_000, 20_000, false},
		{"no keys", 101, 1_000_000, 0, 0, false},
	} {
		bound, walk := store.SparseWalkRows(c.limit, c.stored, c.keys)
		if bound != c.bound || walk != c.walk {
			t.Errorf("%s: bound %d, walk %v; want %d, %v", c.name, bound, walk, c.bound, c.walk)
		}
	}
}
