package graph_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// allowRuleActions is false unless root sets it, on creation or by an
// update, and the feed's answers show it.
func TestFeedAllowRuleActionsAPI(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		a := newFeedsAPI(t, st)
		tsv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "ip\t192.0.2.1\tsrc\t90\n")
		}))
		defer tsv.Close()
		type feed struct {
			ID               string
			AllowRuleActions bool
		}
		create := `mutation($in: CustomFeedInput!) { createCustomFeed(input: $in) { id allowRuleActions } }`
		var plain, allowed struct{ CreateCustomFeed feed }
		a.must(create, &plain, map[string]any{"in": map[string]any{"category": "TSV", "name": "plain",
			"collectionUrl": tsv.URL, "pollingFrequency": 6, "retentionPeriod": 30}})
		a.must(create, &allowed, map[string]any{"in": map[string]any{"category": "TSV", "name": "allowed",
			"collectionUrl": tsv.URL, "pollingFrequency": 6, "retentionPeriod": 30, "allowRuleActions": true}})
		if plain.CreateCustomFeed.AllowRuleActions || !allowed.CreateCustomFeed.AllowRuleActions {
			t.Errorf("created %+v and %+v, want false by default and true when asked", plain.CreateCustomFeed, allowed.CreateCustomFeed)
		}
		a.runner.Wait()

		update := `mutation($id: ID!, $in: FeedUpdateInput!) { updateFeed(id: $id, input: $in) { id allowRuleActions } }`
		var updated struct{ UpdateFeed feed }
		a.must(update, &updated, map[string]any{"id": plain.CreateCustomFeed.ID, "in": map[string]any{"allowRuleActions": true}})
		if !updated.UpdateFeed.AllowRuleActions {
			t.Errorf("after allowing: %+v", updated.UpdateFeed)
		}
		var got struct{ Feed feed }
		a.must(`query($id: ID!) { feed(id: $id) { id allowRuleActions } }`, &got, map[string]any{"id": allowed.CreateCustomFeed.ID})
		if !got.Feed.AllowRuleActions {
			t.Errorf("feed(id) = %+v", got.Feed)
		}
		a.must(update, &updated, map[string]any{"id": allowed.CreateCustomFeed.ID, "in": map[string]any{"allowRuleActions": false}})
		a.must(`query($id: ID!) { feed(id: $id) { id allowRuleActions } }`, &got, map[string]any{"id": allowed.CreateCustomFeed.ID})
		if got.Feed.AllowRuleActions {
			t.Errorf("after disallowing: %+v", got.Feed)
		}
		// Only root: a tenant user changes nothing.
		errs := a.do(a.tenant, update, nil, map[string]any{"id": plain.CreateCustomFeed.ID, "in": map[string]any{"allowRuleActions": false}})
		if len(errs) == 0 {
			t.Error("a tenant user changed allowRuleActions")
		}
	})
}
