package graph

import (
	"context"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

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

// iocs lists indicators; every signed-in user may read them (tenant users
// too: indicators are shared by all tenants).
func (r *Resolver) iocs(ctx context.Context, filter *model.IocFilter, orderBy *model.IocOrder, first *int, after *string) (*model.IocConnection, error) {
	if _, err := auth.UserFrom(ctx); err != nil {
		return nil, err
	}
	f, err := iocFilterFrom(filter)
	if err != nil {
		return nil, err
	}
	o := store.IoCOrder{Field: store.IoCOrderID}
	if orderBy != nil {
		o.Field = iocOrderFields[orderBy.Field]
		o.Desc = orderBy.Direction != nil && *orderBy.Direction == model.OrderDirectionDesc
	}
	n := defaultIoCPage
	if first != nil {
		n = *first
	}
	cursor := ""
	if after != nil {
		cursor = *after
	}
	page, err := r.Store.IoCs(ctx, f, o, n, cursor)
	if err != nil {
		return nil, err
	}
	conn := &model.IocConnection{TotalCount: page.Total, TotalCountCapped: page.TotalCapped, Nodes: make([]*store.IoC, len(page.IoCs)),
		PageInfo: &model.PageInfo{HasNextPage: page.HasNextPage}}
	for i := range page.IoCs {
		conn.Nodes[i] = &page.IoCs[i]
	}
	if page.EndCursor != "" {
		conn.PageInfo.EndCursor = &page.EndCursor
	}
	return conn, nil
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

func (r *Resolver) ioc(ctx context.Context, id string) (*store.IoC, error) {
	if _, err := auth.UserFrom(ctx); err != nil {
		return nil, err
	}
	n, err := model.UnmarshalInt64ID(id)
	if err != nil {
		return nil, store.Invalid("id", "%v", err)
	}
	return r.Store.IoC(ctx, n)
}

func (r *Resolver) iocSources(ctx context.Context, obj *store.IoC) ([]*store.Sighting, error) {
	ss, err := r.sightingsOf(ctx, obj.ID) // batched per request by the loader
	if err != nil {
		return nil, err
	}
	out := make([]*store.Sighting, len(ss))
	for i := range ss {
		if ss[i].Tags == nil {
			ss[i].Tags = []string{}
		}
		out[i] = &ss[i]
	}
	return out, nil
}
