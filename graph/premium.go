package graph

import (
	"context"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/store"
)

func (r *Resolver) feedPremiumKind(_ context.Context, obj *store.Feed) (*model.PremiumFeedKind, error) {
	if obj.Type != store.FeedPremium {
		return nil, nil
	}
	k := model.PremiumFeedKind(obj.Kind)
	return &k, nil
}

func (r *Resolver) premiumFeedKinds(_ context.Context) ([]*model.PremiumFeedKindInfo, error) {
	var out []*model.PremiumFeedKindInfo
	for _, s := range premium.Specs() {
		info := &model.PremiumFeedKindInfo{
			Kind:             model.PremiumFeedKind(s.Kind),
			Title:            s.Title,
			Description:      s.Description,
			EditableFields:   premiumFields(s.Editable),
			RequiredToEnable: premiumFields(s.RequiredToEnable),
			PollingFrequency: intRange(&s.Polling),
			BackfillDays:     intRange(s.Backfill),
			RetentionPeriod:  intRange(s.Retention),
			Creatable:        s.Creatable,
			MaxFeeds:         s.MaxFeeds,
			Categories:       append([]string{}, s.Categories...),
			NamePrefix:       s.NamePrefix,
			IocsPerPoll:      int(s.PerPoll),
			Available:        r.Feeds != nil && r.Feeds.PremiumKindAvailable(s.Kind),
		}
		if s.Retention == nil {
			fixed := s.InitialRetention()
			info.FixedRetentionDays = &fixed
		}
		out = append(out, info)
	}
	return out, nil
}

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

func (r *Resolver) createPremiumFeed(ctx context.Context, input model.PremiumFeedInput) (*store.Feed, error) {
	run, err := r.feedService()
	if err != nil {
		return nil, err
	}
	return run.CreatePremiumFeed(ctx, feeds.PremiumFeedInput{
		Kind:             premium.Kind(input.Kind),
		Name:             input.Name,
		Category:         deref(input.Category),
		APIEndpoint:      input.APIEndpoint,
		PollingFrequency: input.PollingFrequency,
		RetentionPeriod:  input.RetentionPeriod,
	})
}

func (r *Resolver) resetPremiumFeed(ctx context.Context, id string) (*store.Feed, error) {
	run, feedID, err := r.feedServiceAndID(id)
	if err != nil {
		return nil, err
	}
	return run.ResetPremiumFeed(ctx, feedID)
}
