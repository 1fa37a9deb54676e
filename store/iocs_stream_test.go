package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// An export streams the IoCs in the order the table pages them, for every
// order a page offers (the exports take the table's orderBy).
func TestStreamIoCsInEveryPageOrder(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feedA, feedB := newFeed(t, s, "a"), newFeed(t, s, "b")
		// Three batches at different times, scores and kinds repeating, so
		// that each order has ties broken by id and differs from the others.
		for b, feed := range []int64{feedA, feedB, feedA} {
			var inds []ioc.Indicator
			for i := range 5 {
				inds = append(inds, dom(fmt.Sprintf("b%d-%d.example", 2-b, i), "src", (i*7+b)%4))
			}
			inds = append(inds, ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("198.18.0.%d", 9-b), Source: "src", Score: b})
			apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(b) * time.Hour), Retention: time.Duration(10-b) * day, Indicators: inds})
		}
		fields := []store.IoCOrderField{store.IoCOrderID, store.IoCOrderValue, store.IoCOrderType, store.IoCOrderScore,
			store.IoCOrderFirstSeen, store.IoCOrderLastSeen, store.IoCOrderExpiresAt}
		for _, field := range fields {
			for _, desc := range []bool{false, true} {
				o := store.IoCOrder{Field: field, Desc: desc}
				t.Run(fmt.Sprintf("%s desc=%v", field, desc), func(t *testing.T) {
					var paged []string
					for _, i := range pagedIoCs(t, s, store.IoCFilter{}, o, 4, nil) {
						paged = append(paged, i.Value)
					}
					var streamed []string
					err := s.StreamIoCs(ctx, store.IoCFilter{}, o, store.StreamColumns{ValueOnly: true}, func(r *store.IoCRow) error {
						streamed = append(streamed, r.Value)
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if len(paged) != 18 || !slices.Equal(streamed, paged) {
						t.Errorf("streamed %q\npaged    %q", streamed, paged)
					}
				})
			}
		}
	})
}
