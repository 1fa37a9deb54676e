package graph

import (
	"context"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/tifeeds/tifeeds/store"
)

func textsBatch(st *store.Store) dataloader.BatchFunc[int64, *string] {
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
