package graph

import (
	"context"

	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

// IoCStore is what the indicator resolvers and the bulk lookup read of the
// store.
type IoCStore interface {
	IoC(ctx context.Context, id int64) (*store.IoC, error)
	IoCs(ctx context.Context, f store.IoCFilter, o store.IoCOrder, first int, after string) (*store.IoCPage, error)
	IoCsByKeys(ctx context.Context, keys []store.IoCKey) (map[store.IoCKey]*store.IoC, error)
	IoCTexts(ctx context.Context, ids []int64) (map[int64]string, error)
	Sightings(ctx context.Context, iocID int64) ([]store.Sighting, error)
}

// defaultIoCPage is the page size when the query gives no first.
const defaultIoCPage = 50

var iocOrderFields = map[model.IocOrderField]store.IoCOrderField{
	model.IocOrderFieldValue:          store.IoCOrderValue,
	model.IocOrderFieldType:           store.IoCOrderType,
	model.IocOrderFieldScore:          store.IoCOrderScore,
	model.IocOrderFieldFirstSeen:      store.IoCOrderFirstSeen,
	model.IocOrderFieldLastSeen:       store.IoCOrderLastSeen,
	model.IocOrderFieldExpirationDate: store.IoCOrderExpiresAt,
}

func iocFilterFrom(in *model.IocFilter) (store.IoCFilter, error) {
	var f store.IoCFilter
	if in == nil {
		return f, nil
	}
	f.Types = in.Type
	f.MinScore, f.ExpiresBefore, f.ExpiresAfter = in.MinScore, in.ExpiresBefore, in.ExpiresAfter
	for dst, src := range map[*string]*string{&f.Value: in.Value, &f.ValuePrefix: in.ValuePrefix, &f.Search: in.Search, &f.Tag: in.Tag} {
		if src != nil {
			*dst = *src
		}
	}
	if in.FeedID != nil {
		id, err := model.UnmarshalInt64ID(*in.FeedID)
		if err != nil {
			return f, store.Invalid("filter.feedId", "%v", err)
		}
		f.FeedID = id
	}
	return f, nil
}
