package graph

import (
	"context"
	"fmt"
	"time"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/tifeeds/tifeeds/store"
)

// loaderWait is how long a loader gathers keys before one batched query;
// gqlgen resolves the items of a list concurrently, so a page's keys arrive
// within it.
const loaderWait = 2 * time.Millisecond

// loaders batch the nested lookups of one request (the sightings of a page
// of IoCs, the feeds of those sightings) into one query each instead of one
// per row. They do not cache: a subscription's context lives for hours and
// must see fresh rows.
type loaders struct {
	sightings *dataloader.Loader[int64, []store.Sighting]
	feeds     *dataloader.Loader[int64, *store.Feed]
	texts     *dataloader.Loader[int64, *string]
}

type loadersKey struct{}

// LoaderStore is what the loaders read of the store, each in one query for
// many keys.
type LoaderStore interface {
	SightingsByIoC(ctx context.Context, iocIDs []int64) (map[int64][]store.Sighting, error)
	FeedsByID(ctx context.Context, ids []int64) ([]store.Feed, error)
	IoCTexts(ctx context.Context, ids []int64) (map[int64]string, error)
}

// WithLoaders returns ctx carrying fresh loaders on st; the server calls it
// once per request and per websocket connection.
func WithLoaders(ctx context.Context, st LoaderStore) context.Context {
	l := &loaders{
		sightings: dataloader.NewBatchedLoader(sightingsBatch(st),
			dataloader.WithWait[int64, []store.Sighting](loaderWait),
			dataloader.WithCache[int64, []store.Sighting](&dataloader.NoCache[int64, []store.Sighting]{})),
		feeds: dataloader.NewBatchedLoader(feedsBatch(st),
			dataloader.WithWait[int64, *store.Feed](loaderWait),
			dataloader.WithCache[int64, *store.Feed](&dataloader.NoCache[int64, *store.Feed]{})),
		texts: dataloader.NewBatchedLoader(textsBatch(st),
			dataloader.WithWait[int64, *string](loaderWait),
			dataloader.WithCache[int64, *string](&dataloader.NoCache[int64, *string]{})),
	}
	return context.WithValue(ctx, loadersKey{}, l)
}

func loadersFrom(ctx context.Context) *loaders {
	l, _ := ctx.Value(loadersKey{}).(*loaders)
	return l
}

func sightingsBatch(st LoaderStore) dataloader.BatchFunc[int64, []store.Sighting] {
	return func(ctx context.Context, ids []int64) []*dataloader.Result[[]store.Sighting] {
		out := make([]*dataloader.Result[[]store.Sighting], len(ids))
		byIoC, err := st.SightingsByIoC(ctx, ids)
		for i, id := range ids {
			out[i] = &dataloader.Result[[]store.Sighting]{Data: byIoC[id], Error: err}
		}
		return out
	}
}

func feedsBatch(st LoaderStore) dataloader.BatchFunc[int64, *store.Feed] {
	return func(ctx context.Context, ids []int64) []*dataloader.Result[*store.Feed] {
		out := make([]*dataloader.Result[*store.Feed], len(ids))
		feeds, err := st.FeedsByID(ctx, ids)
		byID := make(map[int64]*store.Feed, len(feeds))
		for i := range feeds {
			byID[feeds[i].ID] = &feeds[i]
		}
		for i, id := range ids {
			r := &dataloader.Result[*store.Feed]{Data: byID[id], Error: err}
			if err == nil && r.Data == nil {
				r.Error = fmt.Errorf("feed %d: %w", id, store.ErrNotFound)
			}
			out[i] = r
		}
		return out
	}
}

// sightingsOf returns an IoC's sightings through the request's loader, or
// straight from the store outside a request (tests, tools).
func (r *Resolver) sightingsOf(ctx context.Context, iocID int64) ([]store.Sighting, error) {
	if l := loadersFrom(ctx); l != nil {
		return l.sightings.Load(ctx, iocID)()
	}
	return r.Store.Sightings(ctx, iocID)
}

// feedOf returns a feed through the request's loader, or from the store.
func (r *Resolver) feedOf(ctx context.Context, id int64) (*store.Feed, error) {
	if l := loadersFrom(ctx); l != nil {
		return l.feeds.Load(ctx, id)()
	}
	return r.Store.Feed(ctx, id)
}

func textsBatch(st LoaderStore) dataloader.BatchFunc[int64, *string] {
	return func(ctx context.Context, ids []int64) []*dataloader.Result[*string] {
		out := make([]*dataloader.Result[*string], len(ids))
		texts, err := st.IoCTexts(ctx, ids)
		for i, id := range ids {
			r := &dataloader.Result[*string]{Error: err}
			if t, ok := texts[id]; ok {
				r.Data = &t
			}
			out[i] = r
		}
		return out
	}
}
