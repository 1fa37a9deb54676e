package graph

import (
	"context"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// iocText is a Rule IoC's text, read for a page of IoCs in one query;
// null for the other kinds, and for a rule stored without one.
func (r *Resolver) iocText(ctx context.Context, obj *store.IoC) (*string, error) {
	if obj.Type != ioc.Rule {
		return nil, nil
	}
	if l := loadersFrom(ctx); l != nil {
		return l.texts.Load(ctx, obj.ID)()
	}
	texts, err := r.Store.IoCTexts(ctx, []int64{obj.ID})
	if err != nil {
		return nil, err
	}
	if t, ok := texts[obj.ID]; ok {
		return &t, nil
	}
	return nil, nil
}

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
