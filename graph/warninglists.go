package graph

import (
	"context"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// WarninglistSet is the warninglists in force (with the allowlist): the
// runner's, or the built-in lists with their defaults when there is no
// runner. Warnings are read from it, not stored (docs/decisions.md, issue
// 27): the exports and the TAXII server ask it too.
func (r *Resolver) WarninglistSet() *allowlist.Set {
	if r.Ingest != nil {
		if s := r.Ingest.Warninglists(); s != nil {
			return s
		}
	}
	return builtinSet()
}

func warningModels(ws []allowlist.Warning) []*model.IocWarning {
	out := make([]*model.IocWarning, len(ws))
	for i, w := range ws {
		out[i] = &model.IocWarning{List: w.List, Entry: w.Entry, Action: w.Action}
	}
	return out
}

func warninglistModel(l allowlist.ListState) *model.Warninglist {
	m := &model.Warninglist{Name: l.Name, Description: l.Description, Version: int(l.Version), Type: l.Type,
		EntryCount: l.Entries, Action: l.Action, DefaultAction: l.Default, Builtin: l.Builtin, Kinds: l.Kinds}
	if m.Kinds == nil {
		m.Kinds = []ioc.Kind{}
	}
	if m.DefaultAction == "" {
		m.DefaultAction = allowlist.Off
	}
	if l.NoKinds != "" {
		m.Note = &l.NoKinds
	}
	return m
}

func (r *Resolver) warninglistByName(ctx context.Context, name string) (*model.Warninglist, error) {
	a, err := r.warninglistService()
	if err != nil {
		return nil, err
	}
	states, err := a.Warninglists(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range states {
		if l.Name == name {
			m := warninglistModel(l.ListState)
			m.Removing = l.Removing
			return m, nil
		}
	}
	return nil, store.ErrNotFound
}

func (r *Resolver) warninglistService() (*feeds.Allowlist, error) { return r.allowlistService() }

// maxWarningScan bounds the IoCs one page under the warnings filter reads.
const maxWarningScan = 5000

// iocsByWarnings is a page of the IoCs f selects that a flagging list
// matches (flagged) or that none does: pages of f are read and filtered
// until n qualify or maxWarningScan were read. The cursor after the last
// kept row continues where this page stopped.
func (r *Resolver) iocsByWarnings(ctx context.Context, f store.IoCFilter, o store.IoCOrder, n int, cursor string, flagged bool) (*model.IocConnection, error) {
	if n < 0 || n > store.MaxIoCPage {
		// The store's bound, with its error.
		_, err := r.Store.IoCs(ctx, f, o, n, cursor)
		return nil, err
	}
	set := r.WarninglistSet()
	conn := &model.IocConnection{Nodes: []*store.IoC{}, PageInfo: &model.PageInfo{}}
	scanned := 0
	end := cursor
	for len(conn.Nodes) < n {
		page, err := r.Store.IoCs(ctx, f, o, min(store.MaxIoCPage, maxWarningScan-scanned), end)
		if err != nil {
			return nil, err
		}
		stop := false
		for i := range page.IoCs {
			row := &page.IoCs[i]
			scanned++
			end = store.IoCCursor(o, row)
			if set.Flagged(row.Type, row.Value) == flagged {
				conn.Nodes = append(conn.Nodes, row)
				if len(conn.Nodes) == n {
					// Rows after this one are left for the next page.
					conn.PageInfo.HasNextPage = i < len(page.IoCs)-1 || page.HasNextPage
					stop = true
					break
				}
			}
		}
		if stop {
			break
		}
		if !page.HasNextPage {
			break
		}
		if scanned >= maxWarningScan {
			conn.PageInfo.HasNextPage = true
			break
		}
	}
	conn.TotalCount = len(conn.Nodes)
	conn.TotalCountCapped = conn.PageInfo.HasNextPage
	if end != "" && end != cursor {
		conn.PageInfo.EndCursor = &end
	}
	return conn, nil
}
