package graph_test

import (
	"slices"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/tifeeds/tifeeds/graph"
)

// tenantVisible lists the only fields of root-configured types that a
// tenant-scoped caller may reach: a feed is its id, name and type.
var tenantVisible = map[string][]string{
	"Feed":       {"id", "name", "type"},
	"FeedRun":    nil,
	"Rejection":  nil,
	"FeedHealth": nil,
}

// TestFeedConfigurationIsRootOnlyWherever walks the schema from its roots
// through every field a tenant-scoped caller may select (those without
// @hasScope(scope: ROOT)) and fails when it reaches a feed field beyond id,
// name and type: a new field, or a new way to reach a feed, must be guarded.
func TestFeedConfigurationIsRootOnlyWherever(t *testing.T) {
	schema := graph.NewSchema(&graph.Resolver{}).Schema()
	reached := map[string]map[string]bool{}
	seen := map[string]bool{}
	var walk func(def *ast.Definition)
	walk = func(def *ast.Definition) {
		if def == nil || seen[def.Name] {
			return
		}
		seen[def.Name] = true
		for _, f := range def.Fields {
			if rootOnly(f) || len(f.Name) > 1 && f.Name[:2] == "__" {
				continue
			}
			if reached[def.Name] == nil {
				reached[def.Name] = map[string]bool{}
			}
			reached[def.Name][f.Name] = true
			walk(schema.Types[f.Type.Name()])
		}
		for _, impl := range schema.PossibleTypes[def.Name] {
			walk(impl)
		}
	}
	walk(schema.Query)
	walk(schema.Mutation)
	walk(schema.Subscription)
	if !seen["Feed"] {
		t.Fatal("no path from the roots reaches Feed for a tenant: the walk is broken (Ioc.sources.feed should)")
	}
	for typ, allowed := range tenantVisible {
		for field := range reached[typ] {
			if !slices.Contains(allowed, field) {
				t.Errorf("%s.%s is reachable by a tenant-scoped caller: add @hasScope(scope: ROOT)", typ, field)
			}
		}
	}
}

func rootOnly(f *ast.FieldDefinition) bool {
	d := f.Directives.ForName("hasScope")
	if d == nil {
		return false
	}
	a := d.Arguments.ForName("scope")
	return a != nil && a.Value != nil && a.Value.Raw == "ROOT"
}
