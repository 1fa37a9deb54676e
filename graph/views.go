package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

// ViewStore is what the saved-view resolvers and exports use of the store.
type ViewStore interface {
	View(ctx context.Context, userID, id int64) (*store.SavedView, error)
	Views(ctx context.Context, userID int64, table string) ([]store.SavedView, error)
	SaveView(ctx context.Context, v *store.SavedView) error
	DeleteView(ctx context.Context, userID, id int64) error
}

// viewTable describes what a saved view of one table may hold: the input
// type its filter must satisfy, the enum its order field comes from, and
// its columns as the dashboard names them.
type viewTable struct {
	key        string
	filterType string
	orderEnum  string
	columns    []string
}

var viewTables = map[model.ViewTable]viewTable{
	model.ViewTableFeeds: {
		key: "feeds", filterType: "FeedFilter", orderEnum: "FeedOrderField",
		columns: []string{"icon", "name", "type", "status", "statusMessage", "enabled", "pollingFrequency",
			"retentionPeriod", "backfillDays", "description", "lastIngestion", "iocCount", "nextRun", "actions"},
	},
	model.ViewTableIocs: {
		key: "iocs", filterType: "IocFilter", orderEnum: "IocOrderField",
		columns: []string{"type", "value", "score", "tags", "sources", "firstSeen", "lastSeen", "expirationDate"},
	},
}

// viewDefinition is the JSON document a store.SavedView keeps.
type viewDefinition struct {
	Columns []string         `json:"columns"`
	Filter  map[string]any   `json:"filter,omitempty"`
	Search  string           `json:"search,omitempty"`
	OrderBy *model.ViewOrder `json:"orderBy,omitempty"`
}

func viewFromStore(v *store.SavedView, table model.ViewTable) (*model.SavedView, error) {
	var def viewDefinition
	if err := json.Unmarshal([]byte(v.Definition), &def); err != nil {
		return nil, fmt.Errorf("graph: view %d has a broken definition: %w", v.ID, err)
	}
	return &model.SavedView{
		ID: v.ID, Table: table, Name: v.Name, Columns: def.Columns, Filter: def.Filter,
		Search: def.Search, OrderBy: def.OrderBy, IsDefault: v.IsDefault,
	}, nil
}

// checkInput validates value against the schema's input type typeName with
// GraphQL's own coercion rules, so a saved filter is exactly one the query
// would accept (enum names, list shapes, field names).
func checkInput(typeName string, value map[string]any) error {
	if value == nil {
		return nil
	}
	// The probe query declares the variable without using it.
	checks := rules.NewDefaultRules()
	checks.RemoveRule(rules.NoUnusedVariablesRule.Name)
	doc, errs := gqlparser.LoadQueryWithRules(parsedSchema, "query($v: "+typeName+") { __typename }", checks)
	if errs != nil {
		return fmt.Errorf("graph: unable to build the check for %s: %w", typeName, errs)
	}
	if _, err := validator.VariableValues(parsedSchema, doc.Operations[0], map[string]any{"v": value}); err != nil {
		return fmt.Errorf("not a valid %s: %s", typeName, strings.TrimPrefix(err.Error(), "input: "))
	}
	return nil
}

func enumHas(enum, value string) bool {
	def := parsedSchema.Types[enum]
	if def == nil || def.Kind != ast.Enum {
		return false
	}
	return def.EnumValues.ForName(value) != nil
}
