package store_test

import (
	"cmp"
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

// A valuePrefix past the count cap in type order is read kind after kind,
// each kind in id order (pageOfPrefixByKind): its pages, in both
// directions, with kinds and a tag beside the prefix, follow the IoCs
// ordered by kind and id, whichever of the two ways reads each kind, and
// a page's cursor carries over from one kind to the next.
func TestPrefixPagesInTypeOrder(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "kinds")
		odd := map[string]bool{}
		// Batches of every kind, so ids interleave the kinds, with IoCs
		// outside the prefix between them for the walk to pass.
		for b := range 4 {
			var inds []ioc.Indicator
			for i := b * 5; i < b*5+5; i++ {
				var tags []string
				if i%2 == 1 {
					tags = []string{"odd"}
				}
				for _, in := range []ioc.Indicator{
					{Kind: ioc.Domain, Value: fmt.Sprintf("a%02d.example", i)},
					{Kind: ioc.MD5, Value: fmt.Sprintf("a%031x", i)},
					{Kind: ioc.SHA1, Value: fmt.Sprintf("a%039x", i)},
					{Kind: ioc.SHA256, Value: fmt.Sprintf("a%063x", i)},
					{Kind: ioc.Domain, Value: fmt.Sprintf("b%02d.example", i)},
					{Kind: ioc.IP, Value: fmt.Sprintf("10.0.0.%d", i)},
				} {
					in.Source, in.Score, in.Tags = "src", 50, tags
					odd[in.Value] = len(tags) > 0
					inds = append(inds, in)
				}
			}
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(b) * time.Minute), Retention: 10 * day, Indicators: inds})
		}
		type row struct {
			ID    int64  `bun:"id"`
			Type  string `bun:"type"`
			Value string `bun:"value"`
		}
		var all []row
		if err := s.DB.NewSelect().Table("iocs").Column("id", "type", "value").Scan(ctx, &all); err != nil {
			t.Fatalf("read iocs: %v", err)
		}
		savedCap := s.IoCCountCap
		defer func() { s.IoCCountCap = savedCap }()
		s.IoCCountCap = 3
		cases := []struct {
			name   string
			filter store.IoCFilter
			keep   func(row) bool
		}{
			{"prefix a", store.IoCFilter{ValuePrefix: "a"}, func(r row) bool { return strings.HasPrefix(r.Value, "a") }},
			{"prefix a, md5 and domains", store.IoCFilter{ValuePrefix: "a", Types: []ioc.Kind{ioc.MD5, ioc.Domain}},
				func(r row) bool { return strings.HasPrefix(r.Value, "a") && (r.Type == "md5" || r.Type == "domain") }},
			{"prefix a, odd", store.IoCFilter{ValuePrefix: "a", Tag: "odd"}, func(r row) bool { return strings.HasPrefix(r.Value, "a") && odd[r.Value] }},
		}
		ways := map[string][2]bool{"both ways": {true, true}, "walked": {true, false}, "ranged": {false, true}}
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
				for way, takes := range ways {
					restore := store.PrefixWays(takes[0], takes[1])
					got := pagedIDs(t, s, c.filter, store.IoCOrder{Field: store.IoCOrderType, Desc: desc}, 4, func(page *store.IoCPage) {
						if page.Total != 3 || !page.TotalCapped {
							t.Errorf("%s, desc %v, %s: total %d capped %v, want 3 capped", c.name, desc, way, page.Total, page.TotalCapped)
						}
					})
					restore()
					if !slices.Equal(got, want) {
						t.Errorf("%s, desc %v, %s: pages\n got %v\nwant %v", c.name, desc, way, got, want)
					}
				}
			}
		}
	})
}
