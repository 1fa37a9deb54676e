package graph

import (
	"errors"
	"strconv"
	"sync"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// errNoAllowlist is returned by the allowlist mutations of a server that
// runs no ingestion (tests of other parts).
var errNoAllowlist = errors.New("graph: the allowlist is not available: ingestion is not running")

// builtinSet answers lookups on a server without ingestion: the
// built-in lists with their defaults, parsed when first asked.
var builtinSet = sync.OnceValue(func() *allowlist.Set { return allowlist.NewSet(nil) })

// allowlistMatcher is the allowlist in force: the runner's, or the
// built-in lists when there is no runner.
func (r *Resolver) allowlistMatcher() allowlist.Matcher {
	if r.Ingest != nil {
		return r.Ingest
	}
	return builtinSet()
}

func (r *Resolver) allowlistService() (*feeds.Allowlist, error) {
	if r.Feeds == nil || r.Feeds.Allowlist() == nil {
		return nil, errNoAllowlist
	}
	return r.Feeds.Allowlist(), nil
}

var entryKinds = map[allowlist.EntryKind]model.AllowlistEntryKind{
	allowlist.EntryIP:     model.AllowlistEntryKindIP,
	allowlist.EntryCIDR:   model.AllowlistEntryKindCidr,
	allowlist.EntryDomain: model.AllowlistEntryKindDomain,
	allowlist.EntryURL:    model.AllowlistEntryKindURLPrefix,
}

func allowlistEntryModel(e *store.AllowlistEntry) *model.AllowlistEntry {
	return &model.AllowlistEntry{ID: strconv.FormatInt(e.ID, 10), Kind: entryKinds[allowlist.EntryKind(e.Kind)],
		Value: e.Value, Comment: e.Comment, CreatedAt: e.CreatedAt}
}

// allowlistMatchModel says which entry covers a looked-up value; nil when
// none does.
func (r *Resolver) allowlistMatchModel(kind ioc.Kind, value string) *model.AllowlistMatch {
	m, ok := r.allowlistMatcher().Match(kind, value)
	if !ok {
		return nil
	}
	out := &model.AllowlistMatch{List: m.List, Entry: m.Entry}
	if m.List == allowlist.ListUser {
		id := strconv.FormatInt(m.ID, 10)
		out.EntryID, out.Comment = &id, &m.Comment
	}
	return out
}
