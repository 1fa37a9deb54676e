package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/input"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// Exports read the same search, filter and order as the tables' queries,
// from URL parameters:
//
//	search=<text>  filter=<FeedFilter or IocFilter as JSON>  orderBy=<enum>
//	direction=ASC|DESC  columns=a,b,c  view=<saved view id>
//
// A saved view supplies all of them; parameters given beside it win.

type exportParams struct {
	search, orderBy, direction string
	filter                     map[string]any
	columns                    []string
}

// readExportParams merges the caller's saved view (if named) and the URL.
func (r *Resolver) readExportParams(ctx context.Context, table model.ViewTable, q url.Values) (exportParams, error) {
	var p exportParams
	if id := q.Get("view"); id != "" {
		u, err := auth.UserFrom(ctx)
		if err != nil {
			return p, err
		}
		viewID, err := parseID("view", id)
		if err != nil {
			return p, err
		}
		sv, err := r.Store.View(ctx, u.ID, viewID)
		if err != nil {
			return p, err
		}
		if sv.Table != viewTables[table].key {
			return p, store.Invalid("view", "view %d is not a view of %s", viewID, viewTables[table].key)
		}
		v, err := viewFromStore(sv, table)
		if err != nil {
			return p, err
		}
		p.search, p.filter, p.columns = v.Search, v.Filter, v.Columns
		if v.OrderBy != nil {
			p.orderBy, p.direction = v.OrderBy.Field, string(v.OrderBy.Direction)
		}
	}
	if q.Has("search") {
		p.search = q.Get("search")
	}
	if raw := q.Get("filter"); raw != "" {
		p.filter = nil
		if err := json.Unmarshal([]byte(raw), &p.filter); err != nil {
			return p, store.Invalid("filter", "must be a JSON object: %v", err)
		}
	}
	if err := checkInput(viewTables[table].filterType, p.filter); err != nil {
		return p, store.Invalid("filter", "%v", err)
	}
	if q.Has("orderBy") {
		p.orderBy = q.Get("orderBy")
	}
	if q.Has("direction") {
		p.direction = strings.ToUpper(q.Get("direction"))
	}
	if p.orderBy != "" && !enumHas(viewTables[table].orderEnum, p.orderBy) {
		return p, store.Invalid("orderBy", "unknown order field %q", p.orderBy)
	}
	if p.direction != "" && p.direction != "ASC" && p.direction != "DESC" {
		return p, store.Invalid("direction", "must be ASC or DESC")
	}
	if q.Has("columns") {
		p.columns = nil
		for _, c := range strings.Split(q.Get("columns"), ",") {
			if c = strings.TrimSpace(c); c != "" {
				p.columns = append(p.columns, c)
			}
		}
	}
	return p, nil
}

// decodeFilter turns a filter already checked against its GraphQL input type
// into that type's Go model. Enum values are the upper-case form of the
// stored ones (CUSTOM/custom, SHA256/sha256), which JSON decoding leaves to us.
func decodeFilter(raw map[string]any, into any) error {
	if raw == nil {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("graph: unable to re-encode filter: %w", err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return store.Invalid("filter", "%v", err)
	}
	return nil
}

// FeedExportFrom decodes a feeds export URL.
func (r *Resolver) FeedExportFrom(ctx context.Context, q url.Values) (input.FeedExport, error) {
	p, err := r.readExportParams(ctx, model.ViewTableFeeds, q)
	if err != nil {
		return input.FeedExport{}, err
	}
	var in model.FeedFilter
	if err := decodeFilter(p.filter, &in); err != nil {
		return input.FeedExport{}, err
	}
	for i, t := range in.Type {
		in.Type[i] = store.FeedType(strings.ToLower(string(t)))
	}
	for i, s := range in.Status {
		in.Status[i] = store.FeedStatus(strings.ToLower(string(s)))
	}
	out := input.FeedExport{Query: store.FeedQuery{Search: p.search, Filter: FeedFilterFromInput(&in)}, Columns: p.columns}
	if p.orderBy != "" {
		out.Query.Order = feedOrderFields[model.FeedOrderField(p.orderBy)]
		out.Query.Desc = p.direction == "DESC"
	}
	return out, nil
}

// IoCExportFrom decodes an IoC export URL.
func (r *Resolver) IoCExportFrom(ctx context.Context, q url.Values) (input.IoCExport, error) {
	p, err := r.readExportParams(ctx, model.ViewTableIocs, q)
	if err != nil {
		return input.IoCExport{}, err
	}
	var in model.IocFilter
	if err := decodeFilter(p.filter, &in); err != nil {
		return input.IoCExport{}, err
	}
	for i, k := range in.Type {
		in.Type[i] = ioc.Kind(strings.ToLower(string(k)))
	}
	f, err := iocFilterFrom(&in)
	if err != nil {
		return input.IoCExport{}, err
	}
	if p.search != "" {
		f.Search = p.search
	}
	out := input.IoCExport{Filter: f, Order: store.IoCOrder{Field: store.IoCOrderID}, Columns: p.columns}
	switch w := q.Get("warnings"); w {
	case "", "include":
	case "exclude":
		out.ExcludeWarnings = true
	default:
		return input.IoCExport{}, store.Invalid("warnings", "include or exclude, got %q", w)
	}
	// The IoCs page's filter: unflagged is warnings=exclude; flagged alone
	// is not an export (a firewall list is what is left, not the flagged).
	if in.Warnings != nil {
		if *in.Warnings != model.IocWarningsUnflagged {
			return input.IoCExport{}, store.Invalid("filter", "exports leave flagged indicators out (warnings=exclude) but do not export them alone")
		}
		out.ExcludeWarnings = true
	}
	if p.orderBy != "" {
		out.Order = store.IoCOrder{Field: iocOrderFields[model.IocOrderField(p.orderBy)], Desc: p.direction == "DESC"}
	}
	return out, nil
}
