package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// Exports carry validators that move with every change of the IoCs; a
// request holding current ones gets a 304 without a body.
func TestExportConditionalRequests(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		feed := seedExport(t, st, 3)
		ctx := context.Background()
		get := func(path string, h map[string]string) response {
			t.Helper()
			return f.do("GET", path, "admin", adminKey, "", h)
		}
		r := get("/api/export/iocs.txt", nil)
		etag, lm := r.header.Get("ETag"), r.header.Get("Last-Modified")
		if r.status != 200 || etag == "" || lm == "" || len(r.body) == 0 {
			t.Fatalf("export: %d %v %q", r.status, r.header, r.body)
		}
		for name, h := range map[string]map[string]string{
			"if-none-match":           {"If-None-Match": etag},
			"if-none-match in list":   {"If-None-Match": `"other", ` + etag},
			"if-modified-since":       {"If-Modified-Since": lm},
			"etag wins over the date": {"If-None-Match": etag, "If-Modified-Since": "Mon, 02 Jan 2006 15:04:05 GMT"},
		} {
			if r := get("/api/export/iocs.txt", h); r.status != 304 || len(r.body) != 0 || r.header.Get("ETag") != etag {
				t.Errorf("%s: %d %v %q, want 304", name, r.status, r.header, r.body)
			}
		}
		for name, h := range map[string]map[string]string{
			"other etag":      {"If-None-Match": `"other"`},
			"older date":      {"If-Modified-Since": "Mon, 02 Jan 2006 15:04:05 GMT"},
			"date, stale tag": {"If-None-Match": `"other"`, "If-Modified-Since": lm},
		} {
			if r := get("/api/export/iocs.txt", h); r.status != 200 || len(r.body) == 0 {
				t.Errorf("%s: %d, want 200 with the export", name, r.status)
			}
		}
		// Another format, filter or column list is another representation.
		for _, path := range []string{"/api/export/iocs.csv", "/api/export/iocs.txt?orderBy=VALUE",
			"/api/export/iocs.csv?columns=value"} {
			if r := get(path, map[string]string{"If-None-Match": etag}); r.status != 200 || r.header.Get("ETag") == etag {
				t.Errorf("%s: %d %q, want 200 and its own ETag", path, r.status, r.header.Get("ETag"))
			}
		}
		// Every change of the IoCs moves the ETag: ingestion, expiry, feed deletion.
		now := time.Now().UTC()
		for _, change := range []struct {
			name string
			do   func() error
		}{
			{"ingestion", func() error {
				_, err := st.ApplyBatch(ctx, store.Batch{FeedID: feed, Retention: time.Hour, Now: now,
					Indicators: []ioc.Indicator{{Kind: ioc.IP, Value: "192.0.2.1", Source: "s", Score: 10}}})
				return err
			}},
			{"expiry", func() error {
				_, _, err := st.SweepExpired(ctx, now.Add(2*time.Hour), 0)
				return err
			}},
			{"feed deletion", func() error { return st.DeleteFeed(ctx, feed) }},
		} {
			if err := change.do(); err != nil {
				t.Fatalf("%s: %v", change.name, err)
			}
			r := get("/api/export/iocs.txt", map[string]string{"If-None-Match": etag})
			if r.status != 200 || r.header.Get("ETag") == etag {
				t.Errorf("after %s: %d, ETag %q, want 200 and a new ETag", change.name, r.status, r.header.Get("ETag"))
			}
			etag = r.header.Get("ETag")
		}
	})
}
