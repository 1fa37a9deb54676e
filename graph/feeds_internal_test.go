package graph

import (
	"context"
	"errors"
	"testing"

	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestSightingFeed(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		f, err := st.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: "s",
			CollectionURL: "http://127.0.0.1/x.tsv", PollingFrequency: 1, RetentionPeriod: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := &Resolver{Store: st}
		got, err := (&sightingResolver{r}).Feed(ctx, &store.Sighting{FeedID: f.ID})
		if err != nil || got.Name != "TSV_s" {
			t.Errorf("sighting feed = %+v, %v", got, err)
		}
		if _, err := (&sightingResolver{r}).Feed(ctx, &store.Sighting{FeedID: f.ID + 1}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown feed: %v", err)
		}
		if _, err := (&mutationResolver{r}).CreateCustomFeed(ctx, model.CustomFeedInput{}); !errors.Is(err, errNoRunner) {
			t.Errorf("without a runner: %v", err)
		}
	})
}
