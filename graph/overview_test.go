package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// A tenant-scoped user reads the overview's indicator figures, feeds named
// by name only; the feeds' health answers FORBIDDEN to them and is the root's.
func TestOverviewAPIByScope(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		feed := &store.Feed{Name: "TSV_overview", Type: store.FeedCustom, Category: "TSV", Enabled: true,
			StatusMessage: "Success", PollingFrequency: 24, RetentionPeriod: 30, CreatedAt: now, UpdatedAt: now}
		if _, err := st.DB.NewInsert().Model(feed).Returning("id").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ApplyBatch(ctx, store.Batch{FeedID: feed.ID, Now: now, Retention: 3 * 24 * time.Hour, Indicators: []ioc.Indicator{
			{Kind: ioc.Domain, Value: "a.example", Source: "s", Score: 50, Tags: []string{"emotet"}},
			{Kind: ioc.IP, Value: "192.0.2.3", Source: "s", Score: 50, Tags: []string{"emotet"}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetFeedEnabled(ctx, feed.ID, false); err != nil {
			t.Fatal(err)
		}
		a := newFeedsAPI(t, st)
		const figures = `{ overview { iocCount byType { type count } byFeed { feed { name } count }
			days { day added expired } topTags { tag count } expiring { day count } } }`
		var resp struct {
			Overview struct {
				IocCount int
				ByType   []struct {
					Type  string
					Count int
				}
				ByFeed []struct {
					Feed  struct{ Name string }
					Count int
				}
				Days    []struct{ Added, Expired int }
				TopTags []struct {
					Tag   string
					Count int
				}
				Expiring []struct{ Count int }
			}
		}
		if errs := a.do(a.tenant, figures, &resp, nil); len(errs) > 0 {
			t.Fatalf("tenant: %+v", errs)
		}
		o := resp.Overview
		if o.IocCount != 2 || len(o.ByType) != 2 || len(o.ByFeed) != 1 || o.ByFeed[0].Feed.Name != "TSV_overview" || o.ByFeed[0].Count != 2 {
			t.Errorf("tenant's overview %+v", o)
		}
		if len(o.TopTags) != 1 || o.TopTags[0].Tag != "emotet" || o.TopTags[0].Count != 2 {
			t.Errorf("top tags %+v", o.TopTags)
		}
		if len(o.Days) != store.OverviewDays || len(o.Expiring) != store.OverviewExpiringDays || o.Expiring[3].Count+o.Expiring[2].Count != 2 {
			t.Errorf("%d days, expiring %+v", len(o.Days), o.Expiring)
		}
		expectError(t, a.do(a.tenant, `{ overview { feeds { running } } }`, nil, nil), "FORBIDDEN", "")
		expectError(t, a.do(a.tenant, `{ overview { byFeed { feed { statusMessage } } } }`, nil, nil), "FORBIDDEN", "")

		var health struct {
			Overview struct {
				Feeds []struct {
					Feed struct {
						Name, StatusMessage string
						Enabled             bool
					}
					Running bool
					NextRun *string
				}
			}
		}
		if errs := a.do(a.root, `{ overview { feeds { feed { name statusMessage enabled } running nextRun } } }`, &health, nil); len(errs) > 0 {
			t.Fatalf("root: %+v", errs)
		}
		f := health.Overview.Feeds
		if len(f) != 1 || f[0].Feed.Name != "TSV_overview" || f[0].Running || f[0].NextRun != nil || f[0].Feed.Enabled {
			t.Errorf("feed health %+v: want the disabled feed, not running, no next run", f)
		}
	})
}
