package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

var facetColumns = map[store.FeedFacetColumn]model.FeedFacetColumn{
	store.FacetName:             model.FeedFacetColumnName,
	store.FacetType:             model.FeedFacetColumnType,
	store.FacetStatusMessage:    model.FeedFacetColumnStatusMessage,
	store.FacetEnabled:          model.FeedFacetColumnEnabled,
	store.FacetPollingFrequency: model.FeedFacetColumnPollingFrequency,
	store.FacetRetentionPeriod:  model.FeedFacetColumnRetentionPeriod,
	store.FacetBackfillDays:     model.FeedFacetColumnBackfillDays,
	store.FacetDescription:      model.FeedFacetColumnDescription,
}

// feedFacets counts the values of every filterable column under the search
// and filter of the feeds query it belongs to, each column without its own
// filter (see store.FeedFacets). Values are given as the filter takes them:
// feed types by their enum name.
func (r *Resolver) feedFacets(ctx context.Context, _ *model.FeedConnection) ([]*model.FeedFacet, error) {
	var (
		search string
		filter *model.FeedFilter
	)
	if parent := graphql.GetFieldContext(ctx).Parent; parent != nil {
		if s, ok := parent.Args["search"].(*string); ok && s != nil {
			search = *s
		}
		filter, _ = parent.Args["filter"].(*model.FeedFilter)
	}
	counts, err := r.Store.FeedFacets(ctx, search, FeedFilterFromInput(filter))
	if err != nil {
		return nil, err
	}
	out := make([]*model.FeedFacet, 0, len(store.FeedFacetColumns))
	for _, col := range store.FeedFacetColumns {
		facet := &model.FeedFacet{Column: facetColumns[col], Values: []*model.FacetValue{}}
		for _, v := range counts[col] {
			value := v.Value
			if col == store.FacetType {
				value = feedTypeName(store.FeedType(value))
			}
			facet.Values = append(facet.Values, &model.FacetValue{Value: value, Count: v.Count})
		}
		out = append(out, facet)
	}
	return out, nil
}

// feedTypeName is the GraphQL enum name of a stored feed type.
func feedTypeName(t store.FeedType) string {
	switch t {
	case store.FeedBuiltin:
		return "BUILTIN"
	case store.FeedCustom:
		return "CUSTOM"
	case store.FeedPremium:
		return "PREMIUM"
	}
	return string(t)
}
