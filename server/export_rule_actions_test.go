package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// A rule exports with its own action only when its feed is allowed rule
// actions; otherwise pass, drop and the rejects export as alert. Either way
// suricata-update reads every rule, and changing a feed's allowance moves
// the ETag and Last-Modified's answer, as the rules read otherwise.
func TestExportRuleActions(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		ctx := context.Background()
		now := time.Now().UTC()
		newFeed := func(name string, allowRuleActions bool) int64 {
			f := &store.Feed{Name: name, Type: store.FeedCustom, Category: "TAXII", Enabled: true, StatusMessage: "Success",
				PollingFrequency: 4, RetentionPeriod: 30, CollectionURL: "https://taxii.example/api/collections/x/",
				AllowRuleActions: allowRuleActions, CreatedAt: now, UpdatedAt: now}
			if _, err := st.DB.NewInsert().Model(f).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			return f.ID
		}
		feed, trusted := newFeed("TAXII_acme", false), newFeed("TAXII_trusted", true)
		rule := func(sid int64, text string) ioc.Indicator {
			return ioc.Indicator{Kind: ioc.Rule, Value: ioc.RuleValue(sid), Source: "rules", Score: 50, Text: text}
		}
		for id, inds := range map[int64][]ioc.Indicator{
			feed: {
				rule(2900101, `pass http any any -> any any (msg:"ET POLICY Pass"; sid:2900101; rev:1;)`),
				rule(2900102, "drop tcp any any -> any any (msg:\"ET POLICY Drop\"; sid:2900102; rev:1;)"),
				rule(2900103, `rejectboth tcp any any -> any any (msg:"ET POLICY Reject"; sid:2900103; rev:1;)`),
				rule(2900104, `alert tcp any any -> any any (msg:"ET POLICY Alert"; sid:2900104; rev:1;)`),
			},
			trusted: {
				rule(2900201, `pass http any any -> any any (msg:"ET POLICY Trusted pass"; sid:2900201; rev:1;)`),
				rule(2900202, `reject tcp any any -> any any (msg:"ET POLICY Trusted reject"; sid:2900202; rev:1;)`),
			},
		} {
			if _, err := st.ApplyBatch(ctx, store.Batch{FeedID: id, Retention: 24 * time.Hour, Now: now, Indicators: inds}); err != nil {
				t.Fatal(err)
			}
		}
		actions := func(r response) map[string]string {
			t.Helper()
			if r.status != 200 {
				t.Fatalf("export: %d %s", r.status, r.body)
			}
			out := map[string]string{}
			for _, l := range strings.Split(strings.TrimSuffix(string(r.body), "\n"), "\n") {
				if !strings.HasPrefix(l, "#") {
					out[between(l, "sid:", ";")] = strings.Fields(l)[0]
				}
			}
			checkSuricata(t, string(r.body), len(out))
			return out
		}
		r := f.do("GET", "/api/export/rules.rules", "admin", adminKey, "", nil)
		want := map[string]string{"2900101": "alert", "2900102": "alert", "2900103": "alert", "2900104": "alert",
			"2900201": "pass", "2900202": "reject"}
		if got := actions(r); !mapsEqual(got, want) {
			t.Errorf("actions %v, want %v", got, want)
		}
		etag, modified := r.header.Get("ETag"), r.header.Get("Last-Modified")

		// The STIX export and the TAXII server hand the same rules out.
		patternActions := func(body []byte, objectsKey string) map[string]string {
			t.Helper()
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			var objects []struct {
				Pattern     string `json:"pattern"`
				PatternType string `json:"pattern_type"`
			}
			if err := json.Unmarshal(doc[objectsKey], &objects); err != nil {
				t.Fatalf("objects: %v", err)
			}
			out := map[string]string{}
			for _, o := range objects {
				if o.PatternType == "suricata" {
					out[between(o.Pattern, "sid:", ";")] = strings.Fields(o.Pattern)[0]
				}
			}
			return out
		}
		stixExport := f.do("GET", "/api/export/iocs.stix.json", "admin", adminKey, "", nil)
		if got := patternActions(stixExport.body, "objects"); !mapsEqual(got, want) {
			t.Errorf("STIX export: actions %v, want %v", got, want)
		}
		root, cols := collectionsOf(f)
		objects := f.taxii(root+"collections/"+cols["tifeeds: Suricata rule indicators"]+"/objects/", "admin", adminKey)
		if got := patternActions(objects.body, "objects"); !mapsEqual(got, want) {
			t.Errorf("TAXII server: actions %v, want %v", got, want)
		}

		time.Sleep(1100 * time.Millisecond) // Last-Modified counts seconds
		disallow := false
		if _, _, err := st.UpdateFeed(ctx, trusted, store.FeedPatch{AllowRuleActions: &disallow}); err != nil {
			t.Fatal(err)
		}
		for name, h := range map[string]map[string]string{
			"if-none-match":     {"If-None-Match": etag},
			"if-modified-since": {"If-Modified-Since": modified},
		} {
			r = f.do("GET", "/api/export/rules.rules", "admin", adminKey, "", h)
			if r.status != http.StatusOK {
				t.Errorf("%s after the feed was disallowed: %d, want the rules anew", name, r.status)
				continue
			}
			want["2900201"], want["2900202"] = "alert", "alert"
			if got := actions(r); !mapsEqual(got, want) {
				t.Errorf("%s: actions %v, want %v", name, got, want)
			}
		}
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
