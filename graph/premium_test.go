package graph_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestPremiumFeedsAPI drives the premium feed kinds through GraphQL: the
// kinds' form rules, editing within them, creating a feed-list feed and
// resetting a feed, with errors naming the input field.
func TestPremiumFeedsAPI(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		a := newFeedsAPI(t, st)
		if err := a.feeds.EnsurePremiumFeeds(context.Background()); err != nil {
			t.Fatal(err)
		}

		var kinds struct {
			PremiumFeedKinds []struct {
				Kind                             string
				EditableFields, RequiredToEnable []string
				PollingFrequency                 struct{ Min, Max int }
				BackfillDays, RetentionPeriod    *struct{ Min, Max int }
				FixedRetentionDays               *int
				Creatable, Available             bool
				MaxFeeds                         int
				Categories                       []string
				NamePrefix                       string
			}
		}
		a.must(`{ premiumFeedKinds { kind editableFields requiredToEnable pollingFrequency { min max }
			backfillDays { min max } retentionPeriod { min max } fixedRetentionDays creatable available
			maxFeeds categories namePrefix } }`, &kinds, nil)
		byKind := map[string]int{}
		for i, k := range kinds.PremiumFeedKinds {
			byKind[k.Kind] = i
		}
		if len(byKind) != 6 {
			t.Fatalf("kinds = %+v", kinds.PremiumFeedKinds)
		}
		risk := kinds.PremiumFeedKinds[byKind["RISK_LIST"]]
		if strings.Join(risk.EditableFields, ",") != "API_KEY,POLLING_FREQUENCY" || risk.FixedRetentionDays == nil ||
			*risk.FixedRetentionDays != 14 || risk.RetentionPeriod != nil || risk.BackfillDays != nil || risk.Available {
			t.Errorf("RISK_LIST = %+v", risk)
		}
		dw := kinds.PremiumFeedKinds[byKind["DARK_WEB_TAXII"]]
		if dw.Available { // this API's registry has only TSV
			t.Errorf("DARK_WEB_TAXII available without a TAXII source: %+v", dw)
		}
		fl := kinds.PremiumFeedKinds[byKind["FEED_LIST"]]
		if !fl.Creatable || fl.MaxFeeds != 10 || fl.NamePrefix != "FeedList_" || len(fl.Categories) != 1 ||
			fl.RetentionPeriod == nil || fl.RetentionPeriod.Max != 360 {
			t.Errorf("FEED_LIST = %+v", fl)
		}

		var list struct {
			Feeds struct {
				Nodes []struct {
					ID, Name, PremiumKind string
					CanEdit, CanDelete    bool
					CanReset, HasPassword bool
				}
			}
		}
		a.must(`{ feeds(filter: {type: [PREMIUM]}) { nodes { id name premiumKind canEdit canDelete canReset hasPassword } } }`, &list, nil)
		ids := map[string]string{}
		for _, n := range list.Feeds.Nodes {
			ids[n.PremiumKind] = n.ID
			if !n.CanEdit || n.CanDelete || !n.CanReset {
				t.Errorf("%s actions edit=%v delete=%v reset=%v", n.Name, n.CanEdit, n.CanDelete, n.CanReset)
			}
		}
		if len(ids) != 5 {
			t.Fatalf("premium feeds = %+v", list.Feeds.Nodes)
		}

		const update = `mutation($id: ID!, $in: FeedUpdateInput!) { updateFeed(id: $id, input: $in) { id pollingFrequency hasPassword } }`
		expectError(t, a.do(a.root, update, nil, map[string]any{"id": ids["RISK_LIST"], "in": map[string]any{"pollingFrequency": 30}}),
			"BAD_USER_INPUT", "pollingFrequency")
		expectError(t, a.do(a.root, update, nil, map[string]any{"id": ids["RISK_LIST"], "in": map[string]any{"clientSecret": "x"}}),
			"BAD_USER_INPUT", "clientSecret")
		var upd struct {
			UpdateFeed struct {
				PollingFrequency int
				HasPassword      bool
			}
		}
		a.must(update, &upd, map[string]any{"id": ids["RISK_LIST"], "in": map[string]any{"apiKey": "rk", "pollingFrequency": 12}})
		if upd.UpdateFeed.PollingFrequency != 12 || !upd.UpdateFeed.HasPassword {
			t.Errorf("after update: %+v", upd.UpdateFeed)
		}
		expectError(t, a.do(a.root, `mutation($id: ID!) { setFeedEnabled(id: $id, enabled: true) { id } }`, nil,
			map[string]any{"id": ids["THREAT_PLATFORM"]}), "BAD_USER_INPUT", "username")

		const create = `mutation($in: PremiumFeedInput!) { createPremiumFeed(input: $in) { id name category collectionUrl hasPassword enabled premiumKind } }`
		expectError(t, a.do(a.root, create, nil, map[string]any{"in": map[string]any{"kind": "FEED_LIST", "name": "x",
			"apiEndpoint": "https://feeds.test/x.json?v=2"}}), "BAD_USER_INPUT", "apiEndpoint")
		// Every invalid field at once, each with its field.
		errs := a.do(a.root, create, nil, map[string]any{"in": map[string]any{"kind": "FEED_LIST", "name": "",
			"apiEndpoint": "https://feeds.test/x.json?v=2", "pollingFrequency": 99, "retentionPeriod": 0}})
		var fields []string
		for _, e := range errs {
			fields = append(fields, e.Extensions.Field)
		}
		slices.Sort(fields)
		if want := []string{"apiEndpoint", "name", "pollingFrequency", "retentionPeriod"}; !slices.Equal(fields, want) {
			t.Errorf("invalid premium feed: fields %v, want %v (%+v)", fields, want, errs)
		}
		var created struct {
			CreatePremiumFeed struct {
				ID, Name, Category, CollectionURL, PremiumKind string
				HasPassword, Enabled                           bool
			}
		}
		a.must(create, &created, map[string]any{"in": map[string]any{"kind": "FEED_LIST", "name": "retail",
			"apiEndpoint": "https://feeds.test/v2/retail.json?key=topsecret&v=2", "retentionPeriod": 60}})
		c := created.CreatePremiumFeed
		if c.Name != "FeedList_retail" || c.PremiumKind != "FEED_LIST" || !c.HasPassword || c.Enabled ||
			strings.Contains(c.CollectionURL, "topsecret") || c.Category == "" {
			t.Errorf("created %+v", c)
		}

		var reset struct {
			ResetPremiumFeed struct {
				Enabled, HasPassword bool
				PollingFrequency     int
				StatusMessage        string
			}
		}
		a.must(`mutation($id: ID!) { resetPremiumFeed(id: $id) { enabled hasPassword pollingFrequency statusMessage } }`,
			&reset, map[string]any{"id": ids["RISK_LIST"]})
		if r := reset.ResetPremiumFeed; r.Enabled || r.HasPassword || r.PollingFrequency != 24 || r.StatusMessage != "Disabled" {
			t.Errorf("after reset: %+v", r)
		}
		expectError(t, a.do(a.tenant, `mutation($id: ID!) { resetPremiumFeed(id: $id) { id } }`, nil,
			map[string]any{"id": ids["RISK_LIST"]}), "FORBIDDEN", "")
	})
}
