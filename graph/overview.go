package graph

import (
	"context"
	"time"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// overview answers the Overview page's figures to any signed-in user: the
// indicators are shared by all tenants. Feeds are named by id, name and
// type only, what a tenant may see of them.
func (r *Resolver) overview(ctx context.Context) (*model.Overview, error) {
	if _, err := auth.UserFrom(ctx); err != nil {
		return nil, err
	}
	o, err := r.Store.Overview(ctx, time.Now())
	if err != nil {
		return nil, err
	}
	out := &model.Overview{ComputedAt: o.ComputedAt, IocCount: int(o.Total),
		ByType: make([]*model.IocTypeCount, len(o.ByType)), ByFeed: make([]*model.FeedIocCount, 0, len(o.ByFeed)),
		Days: make([]*model.OverviewDay, len(o.Days)), TopTags: make([]*model.TagCount, len(o.TopTags)),
		Expiring: make([]*model.ExpiringDay, len(o.Expiring))}
	for i, c := range o.ByType {
		out.ByType[i] = &model.IocTypeCount{Type: ioc.Kind(c.Type), Count: int(c.Count)}
	}
	ids := make([]int64, len(o.ByFeed))
	for i, c := range o.ByFeed {
		ids[i] = c.FeedID
	}
	feeds, err := r.Store.FeedsByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*store.Feed, len(feeds))
	for i := range feeds {
		byID[feeds[i].ID] = &feeds[i]
	}
	for _, c := range o.ByFeed {
		// A feed deleted since the figures were read is left out.
		if f := byID[c.FeedID]; f != nil {
			out.ByFeed = append(out.ByFeed, &model.FeedIocCount{Feed: f, Count: int(c.Count)})
		}
	}
	for i, d := range o.Days {
		out.Days[i] = &model.OverviewDay{Day: d.Day, Added: int(d.Added), Expired: int(d.Expired)}
	}
	for i, t := range o.TopTags {
		out.TopTags[i] = &model.TagCount{Tag: t.Tag, Count: int(t.Count)}
	}
	for i, d := range o.Expiring {
		out.Expiring[i] = &model.ExpiringDay{Day: d.Day, Count: int(d.Expiring)}
	}
	return out, nil
}

// overviewFeeds lists every feed with whether it runs and when it runs
// next, read live (not cached): a feed table is small.
func (r *Resolver) overviewFeeds(ctx context.Context) ([]*model.FeedHealth, error) {
	feeds, _, err := r.Store.Feeds(ctx, store.FeedQuery{})
	if err != nil {
		return nil, err
	}
	out := make([]*model.FeedHealth, len(feeds))
	for i := range feeds {
		f := &feeds[i]
		// Another instance's run shows in the stored message only.
		h := &model.FeedHealth{Feed: f, Running: f.StatusMessage == store.MessageRunning}
		if r.Ingest != nil {
			h.Running = h.Running || r.Ingest.Running(f.ID)
			if next, ok := r.Ingest.NextRun(f.ID); ok && f.Enabled {
				h.NextRun = &next
			}
		}
		out[i] = h
	}
	return out, nil
}
