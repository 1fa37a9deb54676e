package graph

import (
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/ingest/premium"
)

func premiumFields(fs []premium.Field) []model.PremiumFeedField {
	out := make([]model.PremiumFeedField, len(fs))
	for i, f := range fs {
		out[i] = model.PremiumFeedField(f)
	}
	return out
}

func intRange(r *premium.Range) *model.IntRange {
	if r == nil {
		return nil
	}
	return &model.IntRange{Min: r.Min, Max: r.Max}
}
