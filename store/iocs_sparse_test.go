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
// where each kind holds the tag differently: most IPs, domains and MD5s
// rarely and at their far ends, the hashes' values sorting before every
// IP, and SHA-1s and SHA-256s throughout, their values interleaved. A walk of each kind's values within a small share then stops
// short of some kinds' matches, whose last walked value must bound the
// page (walkSparse on PostgreSQL, in steps; on SQLite the race's ways).
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
			// SHA-1 and SHA-256 values interleave with the MD5s and with
			// each other (each an MD5's value and more), and hold the tag
			// through their whole range: a walk of one passes the other's
			// matches not walked yet.
			sha1 := ioc.Indicator{Kind: ioc.SHA1, Value: hash.Value + "80000000", Source: "src", Score: 50}
			if i%3 == 0 {
				sha1.Tags = []string{"mixed"}
				want = append(want, sha1.Value)
			}
			sha256 := ioc.Indicator{Kind: ioc.SHA256, Value: hash.Value + strings.Repeat("c", 32), Source: "src", Score: 50}
			if i%4 == 1 {
				sha256.Tags = []string{"mixed"}
				want = append(want, sha256.Value)
			}
			inds = append(inds, sha1, sha256)
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 10 * 24 * time.Hour, Indicators: inds})
		catchUpAll(t, s.CatchUpKeys, 1000)
		slices.Sort(want)
		for _, desc := range []bool{false, true} {
			expected := slices.Clone(want)
			if desc {
				slices.Reverse(expected)
			}
			for _, bound := range []int{2, 5, 13, 40, 1000} {
				for name, way := range map[string][2]bool{"raced": {true, true}, "walked": {true, false}, "read": {false, true}} {
					restoreWays, restoreBound := store.SparseWays(way[0], way[1], 0, 1<<30), store.SparseWalkBudget(bound)
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
// rather than reading its keys, and within how many rows: a page of
// matches spread evenly within the budget of twice the keys, with half as
// much again to spare.
func TestSparseWalkRows(t *testing.T) {
	for _, c := range []struct {
		name         string
		limit        int
		stored       int64
		keys, budget int
		walk         bool
	}{
		{"a tag of 1 % at 1,000,000", 101, 1_000_000, 10_000, 20_000, true},
		{"a tag of 1 % at 3,000,000", 101, 3_000_000, 30_000, 60_000, true},
		{"a common tag", 101, 1_000_000, 40_000, 80_000, true},
		{"half as much again within twice the keys", 101, 1_320_099, 10_000, 20_000, true},
		{"just past it", 101, 1_320_100, 10_000, 20_000, false},
		{"a tag of 0.1 %", 101, 10_000_000, 10_000, 20_000, false},
		{"no keys", 101, 1_000_000, 0, 0, false},
	} {
		budget, walk := store.SparseWalkRows(c.limit, c.stored, c.keys)
		if budget != c.budget || walk != c.walk {
			t.Errorf("%s: budget %d, walk %v; want %d, %v", c.name, budget, walk, c.budget, c.walk)
		}
	}
}
