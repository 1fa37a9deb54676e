package graph

import (
	"context"

	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/input"
	"github.com/tifeeds/tifeeds/store"
)

// AuditStore is what the audit log's resolver reads of the store. Nothing
// here writes: the API offers no way to change or delete a record.
type AuditStore interface {
	AuditEvents(ctx context.Context, f store.AuditFilter, first int, after string) ([]store.AuditEvent, bool, error)
}

// defaultAuditPage is auditEvents' page without first.
const defaultAuditPage = 50

// auditFilter checks the GraphQL filter's bounds and returns the store's.
func auditFilter(in *model.AuditFilter) (store.AuditFilter, error) {
	var f store.AuditFilter
	if in == nil {
		return f, nil
	}
	for _, s := range []struct {
		name string
		v    *string
		to   *string
	}{{"actor", in.Actor, &f.Actor}, {"action", in.Action, &f.Action}, {"targetType", in.TargetType, &f.TargetType}} {
		if s.v == nil {
			continue
		}
		if err := input.CheckString(s.name, *s.v); err != nil {
			return f, err
		}
		*s.to = *s.v
	}
	if in.From != nil {
		f.From = *in.From
	}
	if in.To != nil {
		f.To = *in.To
	}
	return f, nil
}
