package graph

import (
	"context"

	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/store"
)

// builtinSpec is the catalogue entry of a built-in feed.
func builtinSpec(f *store.Feed) (builtin.Spec, bool) {
	if f.Type != store.FeedBuiltin {
		return builtin.Spec{}, false
	}
	return builtin.Lookup(builtin.Kind(f.Kind))
}

func (r *Resolver) feedBuiltinKind(_ context.Context, obj *store.Feed) (*model.BuiltinFeedKind, error) {
	if obj.Type != store.FeedBuiltin {
		return nil, nil
	}
	k := model.BuiltinFeedKind(obj.Kind)
	return &k, nil
}

func (r *Resolver) feedIcon(_ context.Context, obj *store.Feed) (*string, error) {
	spec, ok := builtinSpec(obj)
	if !ok {
		return nil, nil
	}
	return &spec.Icon, nil
}

func (r *Resolver) feedNeeds(_ context.Context, obj *store.Feed) (*string, error) {
	spec, ok := builtinSpec(obj)
	if !ok {
		return nil, nil
	}
	needs := spec.Needs()
	return &needs, nil
}

// feedMissingSetting names the key setting a built-in feed needs and the
// server lacks; the key itself is never read here.
func (r *Resolver) feedMissingSetting(_ context.Context, obj *store.Feed) (*string, error) {
	if _, ok := builtinSpec(obj); !ok || r.Ingest == nil {
		return nil, nil
	}
	if m := r.Ingest.MissingKey(builtin.Kind(obj.Kind)); m != "" {
		return &m, nil
	}
	return nil, nil
}
