package graph_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/client"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// The notification and asset API: a webhook's secret is shown once, a
// tenant's users see and manage only their tenant's channels, assets and
// hits, and changes are audited.
func TestNotificationsAPI(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		secrets, _ := store.NewSecrets([]byte(strings.Repeat("k", 32)))
		bus := events.NewBus()
		log := audit.New(st, nil)
		w := notify.NewWorker(notify.WorkerOptions{Store: st, Secrets: secrets, Webhooks: notify.NewWebhooks(egress.Options{})})
		res := &graph.Resolver{Store: st, Events: bus, Audit: log, Notify: graph.Notifications{
			Channels: &notify.Channels{Store: st, Secrets: secrets, Audit: log, Worker: w},
			Assets:   &notify.Assets{Store: st, Bus: bus, Worker: w, Audit: log},
			Health:   &notify.Health{Store: st, Bus: bus, Worker: w, Audit: log},
		}}
		srv := handler.New(graph.NewSchema(res))
		srv.AddTransport(transport.POST{})
		srv.SetErrorPresenter(graph.ErrorPresenter)
		as := func(u *store.User) *client.Client {
			return client.New(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				srv.ServeHTTP(rw, r.WithContext(auth.WithUser(r.Context(), u)))
			}))
		}
		acme, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some("Acme")}, store.TenantRules{})
		if err != nil {
			t.Fatal(err)
		}
		globex, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some("Globex")}, store.TenantRules{})
		if err != nil {
			t.Fatal(err)
		}
		rootUser, err := st.CreateUser(ctx, "root", "password1", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := &feedsAPI{t: t, root: as(rootUser), tenant: as(&store.User{ID: rootUser.ID + 1, Username: "acme", Scope: store.ScopeTenant, TenantID: &acme.ID})}
		gx := as(&store.User{ID: rootUser.ID + 2, Username: "globex", Scope: store.ScopeTenant, TenantID: &globex.ID})

		const create = `mutation($in: WebhookInput!) { createWebhook(input: $in) { channel { id name kind tenantId target events } secret } }`
		var created struct {
			CreateWebhook struct {
				Channel struct {
					ID, Name, Kind, Target string
					TenantID               *string
					Events                 []string
				}
				Secret *string
			}
		}
		a.must(create, &created, map[string]any{"in": map[string]any{"name": "SOC", "url": "https://hooks.example.org/in?token=abc",
			"events": []string{"FEED_HEALTH", "ASSET_HIT"}}})
		c := created.CreateWebhook
		if c.Secret == nil || len(*c.Secret) < 16 || c.Channel.TenantID != nil || c.Channel.Kind != "WEBHOOK" || strings.Contains(c.Channel.Target, "abc") {
			t.Fatalf("created = %+v", c)
		}
		// Acme's own (the tenant is the caller's, named or not).
		if errs := a.do(a.tenant, create, &created, map[string]any{"in": map[string]any{"name": "acme hook",
			"url": "https://hooks.acme.example/", "events": []string{"ASSET_HIT"}}}); len(errs) != 0 {
			t.Fatal(errs)
		}
		if created.CreateWebhook.Channel.TenantID == nil || *created.CreateWebhook.Channel.TenantID != acme.ID {
			t.Fatalf("Acme's channel = %+v", created.CreateWebhook.Channel)
		}
		acmeChannel := created.CreateWebhook.Channel.ID
		errs := a.do(a.tenant, create, nil, map[string]any{"in": map[string]any{"name": "x", "url": "https://hooks.acme.example/",
			"events": []string{"ASSET_HIT"}, "tenantId": globex.ID}})
		expectError(t, errs, "FORBIDDEN", "")
		errs = a.do(a.tenant, create, nil, map[string]any{"in": map[string]any{"name": "x", "url": "gopher://x", "events": []string{"ASSET_HIT"}}})
		expectError(t, errs, "BAD_USER_INPUT", "url")

		var list struct{ NotificationChannels []struct{ ID string } }
		a.must(`{ notificationChannels { id } }`, &list, nil)
		if len(list.NotificationChannels) != 2 {
			t.Fatalf("root lists %+v", list)
		}
		a.do(gx, `{ notificationChannels { id } }`, &list, nil)
		if len(list.NotificationChannels) != 0 {
			t.Fatalf("Globex lists %+v", list)
		}
		errs = a.do(gx, `mutation($id: ID!) { deleteNotificationChannel(id: $id) }`, nil, map[string]any{"id": acmeChannel})
		expectError(t, errs, "NOT_FOUND", "")
		var tested struct{ TestNotificationChannel bool }
		if errs := a.do(a.tenant, `mutation($id: ID!) { testNotificationChannel(id: $id) }`, &tested, map[string]any{"id": acmeChannel}); len(errs) != 0 || !tested.TestNotificationChannel {
			t.Fatalf("test: %+v", errs)
		}

		// Assets and hits.
		var added struct{ AddTenantAssets struct{ Added int } }
		if errs := a.do(a.tenant, `mutation($t: ID!, $v: [String!]!) { addTenantAssets(tenantId: $t, values: $v) { added } }`, &added,
			map[string]any{"t": acme.ID, "v": []string{"192.0.2.0/24", "acme.example", "acme.example"}}); len(errs) != 0 || added.AddTenantAssets.Added != 2 {
			t.Fatalf("add: %+v %+v", errs, added)
		}
		var imported struct{ ImportTenantAssetsCsv struct{ Added int } }
		if errs := a.do(a.tenant, `mutation($t: ID!, $c: String!) { importTenantAssetsCsv(tenantId: $t, csv: $c) { added } }`, &imported,
			map[string]any{"t": acme.ID, "c": "value,comment\nhttps://portal.acme.example/app,portal\n198.51.100.7,mail\n"}); len(errs) != 0 || imported.ImportTenantAssetsCsv.Added != 2 {
			t.Fatalf("import: %+v %+v", errs, imported)
		}
		var assets struct {
			TenantAssets struct {
				Nodes      []struct{ Kind, Value string }
				TotalCount int
				PageInfo   struct{ HasNextPage bool }
			}
		}
		if errs := a.do(a.tenant, `query($t: ID!) { tenantAssets(tenantId: $t, first: 3) { nodes { kind value } totalCount pageInfo { hasNextPage } } }`,
			&assets, map[string]any{"t": acme.ID}); len(errs) != 0 {
			t.Fatal(errs)
		}
		if assets.TenantAssets.TotalCount != 4 || len(assets.TenantAssets.Nodes) != 3 || assets.TenantAssets.Nodes[0].Kind != "CIDR" ||
			!assets.TenantAssets.PageInfo.HasNextPage {
			t.Fatalf("assets = %+v", assets)
		}
		errs = a.do(gx, `query($t: ID!) { tenantAssets(tenantId: $t) { totalCount } }`, nil, map[string]any{"t": acme.ID})
		expectError(t, errs, "FORBIDDEN", "")
		errs = a.do(gx, `query($t: ID) { assetHits(tenantId: $t) { nodes { id } } }`, nil, map[string]any{"t": acme.ID})
		expectError(t, errs, "FORBIDDEN", "")
		errs = a.do(a.tenant, `mutation($t: ID!, $v: [String!]!) { addTenantAssets(tenantId: $t, values: $v) { added } }`, nil,
			map[string]any{"t": acme.ID, "v": []string{"no such thing at all"}})
		expectError(t, errs, "BAD_USER_INPUT", "values")
		var deleted struct{ DeleteTenantAssets int }
		a.must(`mutation($t: ID!, $v: [String!]!) { deleteTenantAssets(tenantId: $t, values: $v) }`, &deleted,
			map[string]any{"t": acme.ID, "v": []string{"ACME.example"}})
		if deleted.DeleteTenantAssets != 1 {
			t.Fatalf("deleted %d", deleted.DeleteTenantAssets)
		}
		// Feed health thresholds: root only.
		errs = a.do(a.tenant, `{ feedHealthWatch { feedId } }`, nil, nil)
		expectError(t, errs, "FORBIDDEN", "")
		feed := &store.Feed{Name: "phish", Type: store.FeedCustom, Category: store.CategoryTSV, Enabled: true, PollingFrequency: 2,
			RetentionPeriod: 30, StatusMessage: store.MessageSuccess, CollectionURL: "https://feeds.example.org/p.tsv"}
		if err := st.CreateFeed(ctx, feed); err != nil {
			t.Fatal(err)
		}
		type healthJSON struct {
			FeedID, FeedName, State string
			StaleAfterHours         int
			ThresholdSet            bool
		}
		var watch struct{ FeedHealthWatch []healthJSON }
		a.must(`{ feedHealthWatch { feedId feedName state staleAfterHours thresholdSet } }`, &watch, nil)
		if len(watch.FeedHealthWatch) != 1 || watch.FeedHealthWatch[0].StaleAfterHours != 6 || watch.FeedHealthWatch[0].ThresholdSet ||
			watch.FeedHealthWatch[0].State != "OK" {
			t.Fatalf("feedHealthWatch = %+v", watch)
		}
		const set = `mutation($id: ID!, $h: Int) { setFeedHealthThreshold(feedId: $id, hours: $h) { staleAfterHours thresholdSet } }`
		var setAns struct{ SetFeedHealthThreshold healthJSON }
		a.must(set, &setAns, map[string]any{"id": feed.ID, "h": 48})
		if setAns.SetFeedHealthThreshold.StaleAfterHours != 48 || !setAns.SetFeedHealthThreshold.ThresholdSet {
			t.Fatalf("set = %+v", setAns)
		}
		expectError(t, a.do(a.root, set, nil, map[string]any{"id": feed.ID, "h": 0}), "BAD_USER_INPUT", "hours")
		a.must(set, &setAns, map[string]any{"id": feed.ID, "h": nil})
		if setAns.SetFeedHealthThreshold.StaleAfterHours != 6 || setAns.SetFeedHealthThreshold.ThresholdSet {
			t.Fatalf("reset = %+v", setAns)
		}

		// Audited, secrets never in the record.
		var fields []string
		if err := st.DB.NewRaw("SELECT fields FROM audit_events WHERE action LIKE 'notify_channel.%' OR action LIKE 'tenant_assets.%'").Scan(ctx, &fields); err != nil {
			t.Fatal(err)
		}
		if len(fields) != 6 {
			t.Fatalf("%d audit records, want 6 (2 creations, a test, 2 adds, a delete)", len(fields))
		}
		var thresholds int
		if err := st.DB.NewRaw("SELECT COUNT(*) FROM audit_events WHERE action = 'feed.health_threshold'").Scan(ctx, &thresholds); err != nil || thresholds != 2 {
			t.Fatalf("%d threshold records, want 2 (%v)", thresholds, err)
		}
		for _, f := range fields {
			if strings.Contains(f, *c.Secret) || strings.Contains(f, "token=abc") {
				t.Fatalf("audit record shows a secret: %s", f)
			}
		}
	})
}
