package ingest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/taxii"
	"github.com/tifeeds/tifeeds/ingest/taxii/taxiitest"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// suricataIndicator is a TAXII indicator carrying a Suricata rule.
func suricataIndicator(n int, rule string) map[string]any {
	o := taxiitest.Indicator(n)
	o["pattern"], o["pattern_type"] = rule, "suricata"
	return o
}

// The run of a feed whose rule for a sid another feed owns counts that rule
// as rejected, naming both feeds, and stores the rest; each feed goes on
// updating the rules it owns.
func TestRuleOfAnotherFeedsSidIsRejected(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		const first, second = "91a7b528-80eb-42ed-a74d-c6fbd5a26116", "2b0b5a3e-4ad4-4c3f-9d0e-0d9c1c0e6a11"
		srv := taxiitest.NewServer(taxiitest.Collection{ID: first, Title: "ET", CanRead: true},
			taxiitest.Collection{ID: second, Title: "Acme", CanRead: true})
		defer srv.Close()
		added := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
		srv.Add(first, added, suricataIndicator(1, `alert http any any -> any any (msg:"ET one"; sid:2000001; rev:1;)`))
		srv.Add(second, added, suricataIndicator(2, `pass http any any -> any any (msg:"acme"; sid:2000001; rev:1;)`))
		srv.Add(second, added, suricataIndicator(3, `alert http any any -> any any (msg:"acme own"; sid:9000001; rev:1;)`))
		h := newHarness(t, st, tsv.Options{})
		h.reg.Register(taxii.Kind(taxii.Options{PageSize: 100}), taxii.DarkWebKind(taxii.Options{PageSize: 100}))
		create := func(name, collection string) *store.Feed {
			f, err := h.m.CreateCustomFeed(ctx, feeds.CustomFeedInput{Category: store.CategoryTAXII, Name: name,
				CollectionURL: srv.CollectionURL(collection), PollingFrequency: 4, RetentionPeriod: 30, BackfillDays: 7})
			if err != nil {
				t.Fatal(err)
			}
			h.r.Wait()
			return f
		}
		et := create("et", first)
		acme := create("acme", second)
		run := h.lastRun(acme.ID)
		if run.ErrorKind != "" || run.Fetched != 2 || run.Stored != 1 || run.Rejected != 1 || len(run.Rejections) != 1 {
			t.Fatalf("the second feed's run: %+v; want its own rule stored and the other rejected", run)
		}
		if p := run.Rejections[0].Position; p < 1 || p > 2 {
			t.Errorf("rejection at %d, want the rule's place among the run's 2 records", p)
		}
		if r := run.Rejections[0].Reason; !strings.Contains(r, "sid:2000001") || !strings.Contains(r, `"TAXII_et"`) || !strings.Contains(r, `"TAXII_acme"`) {
			t.Errorf("rejection %q: want the sid and both feeds named", r)
		}
		ruleText := func(sid string) string {
			var text string
			if err := st.DB.QueryRowContext(ctx, `SELECT t.text FROM ioc_texts t JOIN iocs i ON i.id = t.ioc_id WHERE i.value = ?`, sid).Scan(&text); err != nil {
				t.Fatal(err)
			}
			return text
		}
		if got := ruleText("sid:2000001"); !strings.HasPrefix(got, "alert ") {
			t.Errorf("sid:2000001 is %q, want the first feed's", got)
		}

		// Each feed updates its own rule.
		for _, u := range []struct {
			feed       *store.Feed
			collection string
			n          int
			sid        string
		}{{et, first, 4, "2000001"}, {acme, second, 5, "9000001"}} {
			srv.Add(u.collection, time.Now().UTC().Truncate(time.Millisecond),
				suricataIndicator(u.n, fmt.Sprintf(`alert http any any -> any any (msg:"updated"; sid:%s; rev:2;)`, u.sid)))
			if run := h.runNow(u.feed.ID); run.Stored != 1 || run.Rejected != 0 {
				t.Errorf("%s updating its sid %s: %+v", u.feed.Name, u.sid, run)
			}
			if got := ruleText("sid:" + u.sid); !strings.Contains(got, "rev:2;") {
				t.Errorf("sid:%s is %q after its feed's update", u.sid, got)
			}
		}
	})
}
