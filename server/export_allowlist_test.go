package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestExportsLeaveAllowlistedOut: adding an allowlist entry takes what it
// covers out of the exports at once, with new validators, so a cached
// export is fetched again.
func TestExportsLeaveAllowlistedOut(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		f := newFixture(t, st)
		feed := seedExport(t, st, 0)
		inds := []ioc.Indicator{
			{Kind: ioc.IP, Value: "192.0.2.10", Source: "s", Score: 50},
			{Kind: ioc.IP, Value: "198.51.100.10", Source: "s", Score: 50},
			{Kind: ioc.Domain, Value: "cdn.example.org", Source: "s", Score: 50},
			{Kind: ioc.URL, Value: "https://example.net/safe/x", Source: "s", Score: 50},
		}
		if _, err := st.ApplyBatch(ctx, store.Batch{FeedID: feed, Retention: time.Hour, Now: time.Now().UTC(), Indicators: inds}); err != nil {
			t.Fatal(err)
		}
		r := f.do("GET", "/api/export/iocs.txt", "admin", adminKey, "", nil)
		etag := r.header.Get("ETag")
		if r.status != 200 || etag == "" || !strings.Contains(string(r.body), "192.0.2.10") {
			t.Fatalf("before: %d %q %s", r.status, etag, r.body)
		}

		bus := events.NewBus()
		a := feeds.NewAllowlist(st, ingest.NewAllowlist(st, bus, nil), bus, nil)
		for _, v := range []string{"192.0.2.0/24", "example.org", "https://example.net/safe/"} {
			if _, _, err := a.Add(ctx, v, ""); err != nil {
				t.Fatal(err)
			}
		}
		r = f.do("GET", "/api/export/iocs.txt", "admin", adminKey, "", map[string]string{"If-None-Match": etag})
		if r.status != 200 || r.header.Get("ETag") == etag {
			t.Fatalf("after: %d, ETag %q (was %q): want a new export", r.status, r.header.Get("ETag"), etag)
		}
		lines := strings.Fields(string(r.body))
		if strings.Join(lines, " ") != "-evil.example 198.51.100.10" && strings.Join(lines, " ") != "198.51.100.10 -evil.example" {
			t.Errorf("export after the entries = %q, want only what no entry covers", lines)
		}
		r = f.do("GET", "/api/export/iocs.csv", "admin", adminKey, "", nil)
		for _, gone := range []string{"192.0.2.10", "cdn.example.org", "example.net"} {
			if strings.Contains(string(r.body), gone) {
				t.Errorf("CSV export still has %s", gone)
			}
		}
	})
}
