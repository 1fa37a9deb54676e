package store

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// FeedFacetColumn names a filterable column of the feeds table.
type FeedFacetColumn string

// The columns with value counts, in the order the dashboard shows them.
const (
	FacetName             FeedFacetColumn = "name"
	FacetType             FeedFacetColumn = "type"
	FacetStatusMessage    FeedFacetColumn = "status_message"
	FacetEnabled          FeedFacetColumn = "enabled"
	FacetPollingFrequency FeedFacetColumn = "polling_frequency"
	FacetRetentionPeriod  FeedFacetColumn = "retention_period"
	FacetBackfillDays     FeedFacetColumn = "backfill_days"
	FacetDescription      FeedFacetColumn = "description"
)

// FeedFacetColumns lists every facet column.
var FeedFacetColumns = []FeedFacetColumn{FacetName, FacetType, FacetStatusMessage, FacetEnabled,
	FacetPollingFrequency, FacetRetentionPeriod, FacetBackfillDays, FacetDescription}

// FacetValue is one value of a column and how many rows have it.
type FacetValue struct {
	Value string `bun:"value"` // as stored: "custom", "true", "24"
	Count int    `bun:"count"`
}

// withoutColumn returns f with column's own filter removed: the faceted
// search rule counts a column's values under every other active filter, so
// choosing another value of the same column never shows an empty table.
func (f FeedFilter) withoutColumn(column FeedFacetColumn) FeedFilter {
	switch column {
	case FacetName:
		f.Names = nil
	case FacetType:
		f.Types = nil
	case FacetStatusMessage:
		f.StatusMessages = nil
	case FacetEnabled:
		f.Enabled = nil
	case FacetPollingFrequency:
		f.PollingFrequencies = nil
	case FacetRetentionPeriod:
		f.RetentionPeriods = nil
	case FacetBackfillDays:
		f.BackfillDays = nil
	case FacetDescription:
		f.Descriptions = nil
	}
	return f
}

// FeedFacets counts, for each filterable column, the rows per value under
// the search and all the other filters. Values come sorted, numbers
// numerically.
func (s *Store) FeedFacets(ctx context.Context, search string, f FeedFilter) (map[FeedFacetColumn][]FacetValue, error) {
	out := make(map[FeedFacetColumn][]FacetValue, len(FeedFacetColumns))
	for _, col := range FeedFacetColumns {
		// Booleans read the same on both dialects; other values are cast
		// to text but still ordered by the column, so numbers sort as numbers.
		valueExpr := "CAST(? AS TEXT)"
		if col == FacetEnabled {
			valueExpr = "CASE WHEN ? THEN 'true' ELSE 'false' END"
		}
		var values []FacetValue
		q := s.reader().NewSelect().TableExpr("feeds").
			ColumnExpr(valueExpr+" AS value", bun.Ident(string(col))).ColumnExpr("COUNT(*) AS count").
			GroupExpr("?", bun.Ident(string(col))).OrderExpr("?", bun.Ident(string(col)))
		q = ApplyFeedFilter(q, search, f.withoutColumn(col))
		if err := q.Scan(ctx, &values); err != nil {
			return nil, fmt.Errorf("store: unable to count feeds by %s: %w", col, err)
		}
		out[col] = values
	}
	return out, nil
}
