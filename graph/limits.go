package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tifeeds/tifeeds/graph/model"
)

// Query cost limits. A page of the dashboard costs a few hundred points;
// the limits stop a single request from walking the whole store.
const (
	// MaxComplexity bounds the estimated cost of one operation.
	MaxComplexity = 20000
	// MaxDepth bounds how deeply selections nest (introspection excepted).
	MaxDepth = 10
	// defaultPageCost is what a connection without `first` is charged for.
	defaultPageCost = 50
)

// complexity charges list fields by how many items they may return, so a
// large page of a nested selection costs what it will really cost.
func complexity() ComplexityRoot {
	var c ComplexityRoot
	perPage := func(child int, first *int) int {
		n := defaultPageCost
		if first != nil && *first > 0 {
			n = *first
		}
		return 1 + child*n
	}
	c.Query.Feeds = func(child int, _ *string, _ *model.FeedFilter, _ *model.FeedOrder, first *int, _ *string) int {
		return perPage(child, first)
	}
	c.Query.Iocs = func(child int, _ *model.IocFilter, _ *model.IocOrder, first *int, _ *string) int {
		return perPage(child, first)
	}
	c.Query.FeedRuns = func(child int, _ string, first *int) int { return perPage(child, first) }
	c.Query.Tenants = func(child int, limit, _ *int) int { return perPage(child, limit) }
	c.Query.TenantGroups = func(child int, limit, _ *int) int { return perPage(child, limit) }
	// A bulk lookup is one indexed query per thousand values, whatever the
	// selection: charge the selection once per thousand.
	c.Query.LookupIocs = func(child int, values []string) int {
		return 1 + child*(len(values)/1000+1)
	}
	return c
}

// depthLimit refuses operations whose selections nest deeper than max.
type depthLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = depthLimit{}

// DepthLimit returns the handler extension that enforces MaxDepth.
func DepthLimit() graphql.HandlerExtension { return depthLimit{max: MaxDepth} }

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (d depthLimit) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	op := opCtx.Doc.Operations.ForName(opCtx.OperationName)
	if op == nil || introspectionOnly(op.SelectionSet) {
		return nil
	}
	if depth := selectionDepth(op.SelectionSet, opCtx.Doc.Fragments, map[string]bool{}); depth > d.max {
		err := gqlerror.Errorf("operation nests %d levels deep, which exceeds the limit of %d", depth, d.max)
		err.Extensions = map[string]any{"code": CodeBadUserInput}
		return err
	}
	return nil
}

func selectionDepth(set ast.SelectionSet, fragments ast.FragmentDefinitionList, seen map[string]bool) int {
	deepest := 0
	for _, sel := range set {
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			d = 1 + selectionDepth(s.SelectionSet, fragments, seen)
		case *ast.InlineFragment:
			d = selectionDepth(s.SelectionSet, fragments, seen)
		case *ast.FragmentSpread:
			if seen[s.Name] { // validation forbids cycles; stay safe anyway
				continue
			}
			if f := fragments.ForName(s.Name); f != nil {
				seen[s.Name] = true
				d = selectionDepth(f.SelectionSet, fragments, seen)
				delete(seen, s.Name)
			}
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// introspectionOnly reports whether every root field is __schema, __type or
// __typename: tools' introspection queries nest deeply by design.
func introspectionOnly(set ast.SelectionSet) bool {
	for _, sel := range set {
		f, ok := sel.(*ast.Field)
		if !ok || (f.Name != "__schema" && f.Name != "__type" && f.Name != "__typename") {
			return false
		}
	}
	return len(set) > 0
}
