package graph

import (
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
