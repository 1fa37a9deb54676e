package graph

import (
	"context"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// MaxLookupValues bounds one bulk lookup.
const MaxLookupValues = 10000

// lookupIocs reads each raw value the way ingestion does (ioc.Detect), then
// asks the store for all of them at once. The answer keeps the input's
// order, one entry per value, duplicates included.
func (r *Resolver) lookupIocs(ctx context.Context, values []string) ([]*model.IocLookup, error) {
	if _, err := auth.UserFrom(ctx); err != nil {
		return nil, err
	}
	if len(values) > MaxLookupValues {
		return nil, store.Invalid("values", "at most %d values per lookup, got %d", MaxLookupValues, len(values))
	}
	out := make([]*model.IocLookup, len(values))
	keys := make([]store.IoCKey, 0, len(values))
	for i, raw := range values {
		res := &model.IocLookup{Input: raw}
		out[i] = res
		kind, value, err := ioc.Detect(raw)
		if err != nil {
			msg := err.Error()
			res.Error = &msg
			continue
		}
		res.Type, res.Value = &kind, &value
		keys = append(keys, store.IoCKey{Type: kind, Value: value})
	}
	found, err := r.Store.IoCsByKeys(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, res := range out {
		if res.Value == nil {
			continue
		}
		if hit, ok := found[store.IoCKey{Type: *res.Type, Value: *res.Value}]; ok {
			res.Known, res.Ioc = true, hit
		}
	}
	return out, nil
}
