package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestExportsLeaveFlaggedOutOnRequest: every IoC export and the TAXII
// server keep flagged IoCs by default (warnings=include) and leave them out
// with warnings=exclude; the two answers have different validators, and
// another value is refused.
func TestExportsLeaveFlaggedOutOnRequest(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		feed := seedExport(t, st, 0)
		// a.duckdns.org: dynamic-dns, 3.5.140.1: amazon-aws (both flag by
		// default); payload.zip: no list.
		if _, err := st.ApplyBatch(context.Background(), store.Batch{FeedID: feed, Retention: 24 * time.Hour, Now: time.Now().UTC(),
			Indicators: []ioc.Indicator{
				{Kind: ioc.Domain, Value: "a.duckdns.org", Source: "s", Score: 50},
				{Kind: ioc.IP, Value: "3.5.140.1", Source: "s", Score: 50},
				{Kind: ioc.Domain, Value: "payload.zip", Source: "s", Score: 50},
			}}); err != nil {
			t.Fatal(err)
		}
		all := []string{"-evil.example", "3.5.140.1", "a.duckdns.org", "payload.zip"}
		kept := []string{"-evil.example", "payload.zip"}
		lines := func(body []byte) []string {
			out := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
			slices.Sort(out)
			return out
		}
		inc := f.do("GET", "/api/export/iocs.txt", "admin", adminKey, "", nil)
		exc := f.do("GET", "/api/export/iocs.txt?warnings=exclude", "admin", adminKey, "", nil)
		if got := lines(inc.body); !slices.Equal(got, all) {
			t.Errorf("txt: %q, want %q", got, all)
		}
		if got := lines(exc.body); !slices.Equal(got, kept) {
			t.Errorf("txt, warnings=exclude: %q, want %q", got, kept)
		}
		if inc.header.Get("ETag") == exc.header.Get("ETag") {
			t.Errorf("include and exclude share the ETag %s", inc.header.Get("ETag"))
		}
		r := f.do("GET", "/api/export/iocs.txt?warnings=include", "admin", adminKey, "", nil)
		if got := lines(r.body); !slices.Equal(got, all) {
			t.Errorf("txt, warnings=include: %q", got)
		}

		r = f.do("GET", "/api/export/iocs.csv?columns=value&warnings=exclude", "admin", adminKey, "", nil)
		var vals []string
		for _, rec := range readCSV(t, r.body)[1:] {
			vals = append(vals, strings.TrimPrefix(rec[0], "'"))
		}
		slices.Sort(vals)
		if !slices.Equal(vals, kept) {
			t.Errorf("csv, warnings=exclude: %q", vals)
		}

		r = f.do("GET", "/api/export/iocs.stix.json?warnings=exclude", "admin", adminKey, "", nil)
		var bundle struct {
			Objects []struct {
				Type    string `json:"type"`
				Pattern string `json:"pattern"`
			} `json:"objects"`
		}
		if err := json.Unmarshal(r.body, &bundle); err != nil {
			t.Fatalf("stix: %v\n%s", err, r.body)
		}
		var patterns []string
		for _, o := range bundle.Objects {
			if o.Type == "indicator" {
				patterns = append(patterns, o.Pattern)
			}
		}
		if len(patterns) != 2 || strings.Contains(strings.Join(patterns, " "), "duckdns") || strings.Contains(strings.Join(patterns, " "), "3.5.140.1") {
			t.Errorf("stix, warnings=exclude: %q", patterns)
		}
		if r := f.do("GET", "/api/export/rules.rules?warnings=exclude", "admin", adminKey, "", nil); r.status != 200 {
			t.Errorf("rules, warnings=exclude: %d %s", r.status, r.body)
		}
		for _, p := range []string{"iocs.txt", "iocs.csv", "iocs.stix.json", "rules.rules"} {
			if r := f.do("GET", "/api/export/"+p+"?warnings=maybe", "admin", adminKey, "", nil); r.status != 422 || !strings.Contains(string(r.body), "warnings") {
				t.Errorf("%s, warnings=maybe: %d %s", p, r.status, r.body)
			}
		}

		// The TAXII server.
		root, byTitle := collectionsOf(f)
		var col string
		for title, id := range byTitle {
			if strings.Contains(strings.ToLower(title), "all") {
				col = id
			}
		}
		if col == "" {
			t.Fatalf("no collection of all indicators among %v", byTitle)
		}
		taxiiValues := func(query string) []string {
			var env struct {
				Objects []struct {
					Pattern string `json:"pattern"`
				} `json:"objects"`
			}
			f.taxiiJSON(root+"collections/"+col+"/objects/"+query, &env)
			var out []string
			for _, o := range env.Objects {
				out = append(out, o.Pattern)
			}
			return out
		}
		if got := taxiiValues(""); len(got) != 4 {
			t.Errorf("taxii: %q", got)
		}
		if got := taxiiValues("?warnings=exclude"); len(got) != 2 || strings.Contains(strings.Join(got, " "), "duckdns") {
			t.Errorf("taxii, warnings=exclude: %q", got)
		}
		wantTAXIIError(t, "warnings=maybe", f.taxii(root+"collections/"+col+"/objects/?warnings=maybe", "admin", adminKey), 400)
	})
}
