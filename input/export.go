package input

import "github.com/tifeeds/tifeeds/store"

// FeedExport is a feeds export decoded from its URL (by graph.Resolver,
// since its filter is the GraphQL FeedFilter input, JSON-encoded).
type FeedExport struct {
	Query   store.FeedQuery
	Columns []string // empty: all
}

// IoCExport is an IoC export decoded from its URL (by graph.Resolver, as
// FeedExport). Every IoC export format of REST streams from one.
type IoCExport struct {
	Filter  store.IoCFilter
	Order   store.IoCOrder
	Columns []string
	// ExcludeWarnings (warnings=exclude) leaves out the IoCs a flagging
	// warninglist matches.
	ExcludeWarnings bool `json:",omitempty"`
}
