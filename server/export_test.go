package server_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// seedExport stores three feeds and, through the first, n IPs.
func seedExport(t *testing.T, st *store.Store, n int) int64 {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	var first int64
	for i, f := range []store.Feed{
		{Name: "TSV_acme", Type: store.FeedCustom, Category: "TSV", Enabled: true, StatusMessage: "Success",
			PollingFrequency: 4, RetentionPeriod: 30, Description: `=HYPERLINK("http://x") "quoted", comma`},
		{Name: "TSV_off", Type: store.FeedCustom, Category: "TSV", Enabled: false, StatusMessage: "Disabled",
			PollingFrequency: 12, RetentionPeriod: 30},
		{Name: "Phish", Type: store.FeedBuiltin, Category: "phishing", Enabled: true, StatusMessage: "Invalid URL",
			PollingFrequency: 24, RetentionPeriod: 30, Description: "ünïcødé"},
	} {
		f.CreatedAt, f.UpdatedAt, f.Kind = now, now, fmt.Sprint(i)
		if _, err := st.DB.NewInsert().Model(&f).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = f.ID
		}
	}
	inds := make([]ioc.Indicator, n)
	for i := range inds {
		inds[i] = ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255),
			Source: "botnet_x", Score: 90, Tags: []string{"emerging_threat"}}
	}
	inds = append(inds, ioc.Indicator{Kind: ioc.Domain, Value: "-evil.example", Source: "phish", Score: 40})
	if _, err := st.ApplyBatch(ctx, store.Batch{FeedID: first, Retention: 24 * time.Hour, Now: now, Indicators: inds}); err != nil {
		t.Fatal(err)
	}
	return first
}

func readCSV(t *testing.T, body []byte) [][]string {
	t.Helper()
	records, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, body)
	}
	return records
}

func TestExportFeedsCSV(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		seedExport(t, st, 1)

		r := f.do("GET", "/api/export/feeds.csv", "admin", adminKey, "", nil)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment; filename=tifeeds-feeds-") {
			t.Fatalf("all columns: %d %v %s", r.status, r.header, r.body)
		}
		all := readCSV(t, r.body)
		if len(all) != 4 || len(all[0]) != 10 || all[0][0] != "Name" || all[0][9] != "Last Ingestion" {
			t.Fatalf("all columns: %q", all)
		}
		byName := map[string][]string{}
		for _, rec := range all[1:] {
			byName[rec[0]] = rec
		}
		if got := byName["TSV_acme"][8]; got != `'=HYPERLINK("http://x") "quoted", comma` {
			t.Errorf("description cell = %q: want the formula neutralised and the quotes intact", got)
		}
		if byName["Phish"][8] != "ünïcødé" || byName["Phish"][2] != "Error" || byName["TSV_off"][4] != "Disabled" {
			t.Errorf("rows = %q", all)
		}

		filter := url.QueryEscape(`{"type":["CUSTOM"]}`)
		r = f.do("GET", "/api/export/feeds.csv?columns=enabled,name&orderBy=NAME&direction=DESC&filter="+filter, "admin", adminKey, "", nil)
		if got := fmt.Sprint(readCSV(t, r.body)); got != "[[Enabled Name] [Disabled TSV_off] [Enabled TSV_acme]]" {
			t.Errorf("selected columns, filter and order: %s", got)
		}
		filter = url.QueryEscape(`{"status":["ERROR","DISABLED"]}`)
		r = f.do("GET", "/api/export/feeds.csv?columns=name&orderBy=NAME&filter="+filter, "admin", adminKey, "", nil)
		if got := fmt.Sprint(readCSV(t, r.body)); got != "[[Name] [Phish] [TSV_off]]" {
			t.Errorf("status filter: %s", got)
		}
		r = f.do("GET", "/api/export/feeds.csv?search=phish&columns=name", "admin", adminKey, "", nil)
		if got := fmt.Sprint(readCSV(t, r.body)); got != "[[Name] [Phish]]" {
			t.Errorf("search: %s", got)
		}

		// A saved view supplies columns, filter and search.
		gr := f.graphql("admin", adminKey, `mutation { saveView(input: {table: FEEDS, name: "errors", columns: ["name", "statusMessage"], filter: {statusMessage: ["Invalid URL"]}}) { id } }`)
		id := between(string(gr.body), `"id":"`, `"`)
		r = f.do("GET", "/api/export/feeds.csv?view="+id, "admin", adminKey, "", nil)
		if got := fmt.Sprint(readCSV(t, r.body)); got != "[[Name Status Message] [Phish Invalid URL]]" {
			t.Errorf("view export: %s (%s)", got, gr.body)
		}

		for name, tc := range map[string]struct {
			query  string
			status int
		}{
			"unknown column":  {"columns=name,bogus", 422},
			"bad filter JSON": {"filter=%7Bnope", 422},
			"bad filter enum": {"filter=" + url.QueryEscape(`{"type":["WEIRD"]}`), 422},
			"unknown view":    {"view=999", 404},
			"bad order":       {"orderBy=VALUE", 422},
		} {
			t.Run(name, func(t *testing.T) {
				r := f.do("GET", "/api/export/feeds.csv?"+tc.query, "admin", adminKey, "", nil)
				if r.status != tc.status || errorCode(t, r.body) == "" {
					t.Errorf("%s: %d %s", tc.query, r.status, r.body)
				}
			})
		}
		if r := f.do("GET", "/api/export/feeds.csv", "", "", "", nil); r.status != 401 {
			t.Errorf("no credentials: %d", r.status)
		}
		if r := f.do("GET", "/api/export/feeds.csv", "analyst", f.tenantKey, "", nil); r.status != 403 {
			t.Errorf("tenant scope: %d", r.status)
		}
	})
}

func TestExportIoCs(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		const n = 2500 // more than one export page
		seedExport(t, st, n)

		r := f.do("GET", "/api/export/iocs.txt", "analyst", f.tenantKey, "", nil)
		if r.status != 200 || r.header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("txt: %d %v", r.status, r.header)
		}
		lines := strings.Split(strings.TrimSuffix(string(r.body), "\n"), "\n")
		seen := map[string]bool{}
		for _, l := range lines {
			seen[l] = true
		}
		if len(lines) != n+1 || len(seen) != n+1 || !seen["10.0.9.195"] || !seen["-evil.example"] {
			t.Errorf("txt export has %d lines (%d distinct), want %d", len(lines), len(seen), n+1)
		}

		filter := url.QueryEscape(`{"type":["DOMAIN"]}`)
		r = f.do("GET", "/api/export/iocs.csv?columns=value,score,tags,sources&filter="+filter, "admin", adminKey, "", nil)
		if got := fmt.Sprint(readCSV(t, r.body)); got != "[[Value Score Tags Sources] ['-evil.example 40  TSV_acme/phish]]" {
			t.Errorf("filtered CSV: %s", got)
		}
		r = f.do("GET", "/api/export/iocs.csv", "admin", adminKey, "", nil)
		all := readCSV(t, r.body)
		if len(all) != n+2 || strings.Join(all[0], ",") != "Type,Value,Score,Tags,Sources,First Seen,Last Seen,Expiration Date" {
			t.Errorf("full CSV: %d rows, header %q", len(all), all[0])
		}
		// The table's every order exports, first seen too.
		r = f.do("GET", "/api/export/iocs.txt?orderBy=FIRST_SEEN&direction=DESC", "admin", adminKey, "", nil)
		if got := strings.Count(string(r.body), "\n"); r.status != 200 || got != n+1 {
			t.Errorf("export by first seen: %d, %d lines", r.status, got)
		}
		r = f.do("GET", "/api/export/iocs.txt?filter="+url.QueryEscape(`{"minScore":95}`), "admin", adminKey, "", nil)
		if r.status != 200 || len(r.body) != 0 {
			t.Errorf("empty export: %d %q", r.status, r.body)
		}
	})
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}

// TestExportedCSVInEveryLocale: both CSV exports (feeds.csv and iocs.csv)
// quote a cell holding any locale's delimiter and neutralise a formula
// after one, not only at the cell's start.
func TestExportedCSVInEveryLocale(t *testing.T) {
	const hostile = `aaa;=cmd|' /C calc'!A0`
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		ctx := context.Background()
		now := time.Now().UTC()
		feed := store.Feed{Name: "TSV_x", Type: store.FeedCustom, Category: "TSV", Enabled: true,
			PollingFrequency: 4, RetentionPeriod: 30, Description: hostile, CreatedAt: now, UpdatedAt: now}
		if _, err := st.DB.NewInsert().Model(&feed).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ApplyBatch(ctx, store.Batch{FeedID: feed.ID, Retention: time.Hour, Now: now, Indicators: []ioc.Indicator{
			{Kind: ioc.Domain, Value: "a.example", Source: "src|@SUM(A1)", Score: 50, Tags: []string{"x", "+1+2"}},
		}}); err != nil {
			t.Fatal(err)
		}

		for path, want := range map[string][]string{
			"/api/export/feeds.csv?columns=name,description":  {"Name", "Description", "TSV_x", `aaa;'=cmd|' /C calc'!A0`},
			"/api/export/iocs.csv?columns=value,tags,sources": {"Value", "Tags", "Sources", "a.example", `'+1+2;x`, `TSV_x/src|'@SUM(A1)`},
		} {
			r := f.do("GET", path, "admin", adminKey, "", nil)
			records := readCSV(t, r.body)
			if got := fmt.Sprint(records); r.status != 200 || got != fmt.Sprint(want[:len(want)/2], want[len(want)/2:]) &&
				got != fmt.Sprint([][]string{want[:len(want)/2], want[len(want)/2:]}) {
				t.Errorf("%s: %d %q, want %q", path, r.status, records, want)
			}
			// An importer splitting on any locale's delimiter, quotes or not,
			// finds no part that starts a formula.
			for _, line := range strings.Split(string(r.body), "\r\n") {
				for _, comma := range []string{",", ";", "\t", "|"} {
					for _, part := range strings.Split(line, comma) {
						if p := strings.TrimLeft(part, ` "`); p != "" && strings.ContainsAny(p[:1], "=+-@") {
							t.Errorf("%s split on %q: part %q of %q starts a formula", path, comma, part, line)
						}
					}
				}
			}
		}
	})
}
