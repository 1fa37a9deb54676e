package graph

import (
	"context"
	"fmt"

	gqlcomplexity "github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tifeeds/tifeeds/graph/model"
)

// Query cost limits. A page of the dashboard costs a few thousand points;
// the limits stop a single request from walking the whole store, and refuse
// an operation before any resolver runs.
const (
	// MaxComplexity bounds the estimated cost of one operation.
	MaxComplexity = 20000
	// MaxDepth bounds how deeply selections nest (introspection excepted).
	MaxDepth = 10
	// MaxFields bounds the fields of one operation, fragments expanded: a
	// dashboard page selects about a hundred, an introspection query a few
	// hundred.
	MaxFields = 1000
	// MaxAliases bounds the aliased fields of one operation: aliases are
	// how one request repeats an expensive field.
	MaxAliases = 50
	// MaxAnswerBytes bounds the data of one query or mutation answer, which
	// gqlgen holds in memory whole: the dashboard's 10,000-value lookup
	// writes about 2 MB, a page of 1,000 IoCs with their sources a few.
	MaxAnswerBytes = 32 << 20
	// defaultPageCost is what a connection without `first` is charged for.
	defaultPageCost = 50
	// iocScanCost is what every iocs field costs besides its page: it
	// always counts the matching rows (a scan of the index or the table).
	iocScanCost = 200
	// textSearchCost is the surcharge of a substring search, which no index
	// serves: it reads every row. 1.2 million IoCs take ~150 ms.
	textSearchCost = 1000
	// lookupValuesPerPoint is how many bulk-lookup values cost one point
	// per selected field: the dashboard's lookup of 10,000 values, 19
	// fields, costs 10,001.
	lookupValuesPerPoint = 20
)

// complexity charges list fields by how many items they may return, so a
// large page of a nested selection costs what it will really cost, and
// counts and text searches by the rows they read.
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
	c.Query.Iocs = func(child int, filter *model.IocFilter, _ *model.IocOrder, first *int, _ *string) int {
		cost := perPage(child, first) + iocScanCost
		if filter != nil && filter.Search != nil && *filter.Search != "" {
			cost += textSearchCost
		}
		return cost
	}
	c.Query.AuditEvents = func(child int, _ *model.AuditFilter, first *int, _ *string) int { return perPage(child, first) }
	c.Query.FeedRuns = func(child int, _ string, first *int) int { return perPage(child, first) }
	c.Query.ChannelDeliveries = func(child int, _ string, first *int, _ *string) int { return perPage(child, first) }
	c.Query.TenantAssets = func(child int, _ string, first *int, _ *string) int { return perPage(child, first) }
	c.Query.AssetHits = func(child int, _ *string, first *int, _ *string) int { return perPage(child, first) }
	c.Query.Tenants = func(child int, limit, _ *int) int { return perPage(child, limit) }
	c.Query.TenantGroups = func(child int, limit, _ *int) int { return perPage(child, limit) }
	// A bulk lookup answers one element per value, like a page per item,
	// plus the probe of each value in the store; but the dashboard asks for
	// 10,000 at once, ten times the largest page, so a value is charged a
	// twentieth of a page item (lookupValuesPerPoint). The values are the
	// variables' own, known here before any resolver runs.
	c.Query.LookupIocs = func(child int, values []string) int {
		return 1 + (len(values)*(child+1)+lookupValuesPerPoint-1)/lookupValuesPerPoint
	}
	return c
}

// Limits are the bounds UseLimitsOf installs.
type Limits struct {
	MaxComplexity, MaxFields, MaxAliases, MaxDepth int
	MaxAnswerBytes                                 int64
}

// DefaultLimits are the service's limits.
func DefaultLimits() Limits {
	return Limits{MaxComplexity: MaxComplexity, MaxFields: MaxFields, MaxAliases: MaxAliases, MaxDepth: MaxDepth, MaxAnswerBytes: MaxAnswerBytes}
}

// UseLimits installs the service's limits on a GraphQL handler.
func UseLimits(srv *handler.Server) { UseLimitsOf(srv, DefaultLimits()) }

// UseLimitsOf installs the operation limits on a GraphQL handler: fields,
// aliases, depth, cost (introspection included) and string inputs, all
// checked while the operation is validated, before any resolver, whatever
// the transport; and the size of each query or mutation answer, checked
// while it is written.
func UseLimitsOf(srv *handler.Server, l Limits) {
	srv.Use(&operationLimits{maxCost: l.MaxComplexity, maxFields: l.MaxFields, maxAliases: l.MaxAliases, maxDepth: l.MaxDepth})
	srv.Use(&inputLimits{})
	srv.Use(answerLimit{maxBytes: l.MaxAnswerBytes})
}

// operationLimits refuses operations that are too big or too costly.
// gqlgen's own complexity walk skips __schema altogether, and expands
// fragments without bound, so counting fields comes first and introspection
// is charged here by the size of the schema it lists.
type operationLimits struct {
	maxCost, maxFields, maxAliases, maxDepth int

	es graphql.ExecutableSchema
	// schemaCost is what one __schema costs: every type, field, argument
	// and enum value it may list.
	schemaCost int
	// typeCost is what one __type costs: the largest type.
	typeCost int
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = &operationLimits{}

func (*operationLimits) ExtensionName() string { return "OperationLimits" }

func (l *operationLimits) Validate(es graphql.ExecutableSchema) error {
	l.es = es
	l.schemaCost, l.typeCost = 0, 0
	for _, t := range es.Schema().Types {
		cost := 1 + len(t.EnumValues) + len(t.Interfaces) + len(t.Types)
		for _, f := range t.Fields {
			cost += 1 + len(f.Arguments)
		}
		l.schemaCost += cost
		l.typeCost = max(l.typeCost, cost)
	}
	return nil
}

// limitError is a refused operation, naming the limit and its value.
func limitError(limit string, value int, format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf("%s", fmt.Sprintf(format, args...))
	err.Extensions = map[string]any{"code": CodeBadUserInput, "limit": limit, "limitValue": value}
	return err
}

func (l *operationLimits) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	op := opCtx.Doc.Operations.ForName(opCtx.OperationName)
	if op == nil {
		return nil
	}
	c := fieldCounter{fragments: opCtx.Doc.Fragments, max: l.maxFields}
	c.walk(op.SelectionSet, 0)
	switch {
	case c.fields > l.maxFields:
		return limitError("fields", l.maxFields, "operation selects more than %d fields, which exceeds the limit of %d", l.maxFields, l.maxFields)
	case c.aliases > l.maxAliases:
		return limitError("aliases", l.maxAliases, "operation has %d aliased fields, which exceeds the limit of %d", c.aliases, l.maxAliases)
	}
	if !introspectionOnly(op.SelectionSet) && c.depth > l.maxDepth {
		return limitError("depth", l.maxDepth, "operation nests %d levels deep, which exceeds the limit of %d", c.depth, l.maxDepth)
	}
	cost := gqlcomplexity.Calculate(ctx, l.es, op, opCtx.Variables)
	cost += c.schemas*l.schemaCost + c.types*l.typeCost
	if cost > l.maxCost {
		return limitError("complexity", l.maxCost, "operation has complexity %d, which exceeds the limit of %d", cost, l.maxCost)
	}
	return nil
}

// fieldCounter walks an operation with its fragments expanded, and stops
// as soon as it passes max fields, so that fragments spread many times
// cannot make the walk itself expensive.
type fieldCounter struct {
	fragments ast.FragmentDefinitionList
	max       int
	fields    int
	aliases   int
	depth     int
	schemas   int // __schema fields
	types     int // __type fields
	spreading map[string]bool
}

func (c *fieldCounter) walk(set ast.SelectionSet, depth int) {
	for _, sel := range set {
		if c.fields > c.max {
			return
		}
		switch s := sel.(type) {
		case *ast.Field:
			c.fields++
			if s.Alias != "" && s.Alias != s.Name {
				c.aliases++
			}
			switch s.Name {
			case "__schema":
				c.schemas++
			case "__type":
				c.types++
			}
			c.depth = max(c.depth, depth+1)
			c.walk(s.SelectionSet, depth+1)
		case *ast.InlineFragment:
			c.walk(s.SelectionSet, depth)
		case *ast.FragmentSpread:
			if c.spreading[s.Name] { // validation forbids cycles; stay safe anyway
				continue
			}
			if f := c.fragments.ForName(s.Name); f != nil {
				if c.spreading == nil {
					c.spreading = map[string]bool{}
				}
				c.spreading[s.Name] = true
				c.walk(f.SelectionSet, depth)
				delete(c.spreading, s.Name)
			}
		}
	}
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
