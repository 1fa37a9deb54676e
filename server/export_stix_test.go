package server_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

type stixBundle struct {
	Type    string           `json:"type"`
	ID      string           `json:"id"`
	Objects []map[string]any `json:"objects"`
}

func TestExportSTIX(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		feed := seedExport(t, st, 3)
		now := time.Now().UTC()
		if _, err := st.ApplyBatch(context.Background(), store.Batch{FeedID: feed, Retention: 24 * time.Hour, Now: now, Indicators: []ioc.Indicator{
			{Kind: ioc.URL, Value: `http://evil.example/it's\here`, Score: 70, Tags: []string{"phishing", "kit"}},
			{Kind: ioc.IP, Value: "2001:db8::1", Score: 60},
			{Kind: ioc.SHA256, Value: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Score: 80},
			{Kind: ioc.CertSHA1, Value: "da39a3ee5e6b4b0d3255bfef95601890afd80709", Score: 80},
			{Kind: ioc.Rule, Value: "sid:1", Text: `alert tcp any any -> any any (msg:"x"; sid:1;)`, Score: 50},
		}}); err != nil {
			t.Fatal(err)
		}
		r := f.do("GET", "/api/export/iocs.stix.json", "analyst", f.tenantKey, "", nil)
		if r.status != 200 || r.header.Get("Content-Type") != "application/stix+json;version=2.1" || r.header.Get("ETag") == "" {
			t.Fatalf("STIX export: %d %v", r.status, r.header)
		}
		var b stixBundle
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.body)
		}
		if b.Type != "bundle" || !strings.HasPrefix(b.ID, "bundle--") || len(b.Objects) != 1+4+5 {
			t.Fatalf("bundle %s %s with %d objects", b.Type, b.ID, len(b.Objects))
		}
		identity := b.Objects[0]
		if identity["type"] != "identity" || identity["identity_class"] != "system" {
			t.Fatalf("first object: %v", identity)
		}
		patterns := map[string]map[string]any{}
		for _, o := range b.Objects[1:] {
			if o["type"] != "indicator" || o["spec_version"] != "2.1" || o["created_by_ref"] != identity["id"] ||
				o["valid_from"] == nil || o["valid_until"] == nil || o["created"] == nil || o["modified"] == nil {
				t.Errorf("indicator lacks a required property: %v", o)
			}
			if !strings.HasPrefix(o["id"].(string), "indicator--") {
				t.Errorf("id %v", o["id"])
			}
			patterns[o["pattern"].(string)] = o
		}
		for pattern, want := range map[string]string{
			`[url:value = 'http://evil.example/it\'s\\here']`:                                              "stix",
			`[ipv6-addr:value = '2001:db8::1']`:                                                            "stix",
			`[ipv4-addr:value = '10.0.0.2']`:                                                               "stix",
			`[domain-name:value = '-evil.example']`:                                                        "stix",
			`[file:hashes.'SHA-256' = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855']`: "stix",
			`[x509-certificate:hashes.'SHA-1' = 'da39a3ee5e6b4b0d3255bfef95601890afd80709']`:               "stix",
			`alert tcp any any -> any any (msg:"x"; sid:1;)`:                                               "suricata",
		} {
			o, ok := patterns[pattern]
			if !ok {
				t.Errorf("no indicator with pattern %s", pattern)
				continue
			}
			if o["pattern_type"] != want {
				t.Errorf("%s: pattern_type %v, want %s", pattern, o["pattern_type"], want)
			}
		}
		url1 := patterns[`[url:value = 'http://evil.example/it\'s\\here']`]
		if url1["confidence"] != 70.0 || len(url1["labels"].([]any)) != 2 {
			t.Errorf("confidence and labels: %v", url1)
		}
		// Deterministic ids: a second pull names every indicator alike.
		var again stixBundle
		_ = json.Unmarshal(f.do("GET", "/api/export/iocs.stix.json", "admin", adminKey, "", nil).body, &again)
		ids := map[string]bool{}
		for _, o := range again.Objects {
			ids[o["id"].(string)] = true
		}
		for _, o := range b.Objects {
			if !ids[o["id"].(string)] {
				t.Errorf("%s is not in the second pull", o["id"])
			}
		}
		if again.ID == b.ID {
			t.Errorf("two bundles share the id %s", b.ID)
		}
		// The filters of the other exports, and their validators.
		r = f.do("GET", "/api/export/iocs.stix.json?filter="+url.QueryEscape(`{"type":["DOMAIN"]}`), "admin", adminKey, "", nil)
		var dom stixBundle
		if err := json.Unmarshal(r.body, &dom); err != nil || len(dom.Objects) != 2 || dom.Objects[1]["pattern"] != `[domain-name:value = '-evil.example']` {
			t.Errorf("filtered: %v %s", err, r.body)
		}
		if r2 := f.do("GET", "/api/export/iocs.stix.json?filter="+url.QueryEscape(`{"type":["DOMAIN"]}`), "admin", adminKey, "",
			map[string]string{"If-None-Match": r.header.Get("ETag")}); r2.status != 304 {
			t.Errorf("If-None-Match: %d", r2.status)
		}
		if r2 := f.do("GET", "/api/export/iocs.stix.json", "admin", adminKey, "",
			map[string]string{"If-None-Match": r.header.Get("ETag")}); r2.status != 200 {
			t.Errorf("another filter's ETag: %d", r2.status)
		}
		if r := f.do("GET", "/api/export/iocs.stix.json", "admin", "wrong", "", nil); r.status != 401 {
			t.Errorf("bad credentials: %d", r.status)
		}
	})
}
