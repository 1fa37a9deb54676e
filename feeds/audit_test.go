package feeds_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestPremiumFeedChangesAreAuditedWithoutTheirKeys(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		secrets, err := store.NewSecrets([]byte(strings.Repeat("s", 32)))
		if err != nil {
			t.Fatal(err)
		}
		svc, err := feeds.New(feeds.Options{Store: st, Secrets: secrets, Bus: events.NewBus(), Sources: tsvOnly{},
			Runner: &fakeRunner{}, Audit: audit.New(st, nil)})
		if err != nil {
			t.Fatal(err)
		}
		ctx := audit.WithClient(auth.WithUser(context.Background(), &store.User{ID: 1, Username: "admin", Scope: store.ScopeRoot}), "198.51.100.4")
		f, err := svc.CreatePremiumFeed(ctx, feeds.PremiumFeedInput{Kind: premium.FeedList, Name: "finance",
			APIEndpoint: "https://feeds.example.test/v2/finance.json?key=SECRETKEY1&v=2"})
		if err != nil {
			t.Fatal(err)
		}
		endpoint := "https://feeds.example.test/v2/finance.json?key=SECRETKEY2&v=2"
		if _, err := svc.UpdateFeed(ctx, f.ID, feeds.FeedUpdate{APIEndpoint: &endpoint}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.ResetPremiumFeed(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
		events, _, err := st.AuditEvents(context.Background(), store.AuditFilter{TargetType: audit.TargetFeed}, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range events {
			got = append(got, e.Action)
			if strings.Contains(e.Fields, "SECRETKEY") || e.Actor != "admin" || e.Client != "198.51.100.4" {
				t.Errorf("record %+v", e)
			}
		}
		if strings.Join(got, ",") != "feed.reset,feed.update,feed.create" {
			t.Errorf("records %v", got)
		}
		if !strings.Contains(events[2].Fields, `"apiEndpoint":"***"`) || !strings.Contains(events[2].Fields, `"kind":"FEED_LIST"`) {
			t.Errorf("create fields %s", events[2].Fields)
		}
	})
}
