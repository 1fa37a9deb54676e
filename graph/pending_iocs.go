package graph

// Placeholders until the ingestion core (issue 3) lands; replace each with its real resolver in iocs.go
// and delete this file.

import (
	"context"

	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

func (r *Resolver) iocSources(ctx context.Context, obj *store.IoC) ([]*store.Sighting, error) {
	return nil, errNotImplemented
}
func (r *Resolver) iocs(ctx context.Context, filter *model.IocFilter, orderBy *model.IocOrder, first *int, after *string) (*model.IocConnection, error) {
	return nil, errNotImplemented
}
func (r *Resolver) ioc(ctx context.Context, id string) (*store.IoC, error) {
	return nil, errNotImplemented
}
