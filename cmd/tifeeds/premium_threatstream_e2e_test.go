package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
)

// premiumVendorE2E drives the one feed of a premium vendor kind through
// the API of a server started by startBuiltinE2E.
type premiumVendorE2E struct {
	*builtinE2E
	kind string
}

// feed returns the premium feed of the kind.
func (e premiumVendorE2E) feed() e2eFeed {
	e.t.Helper()
	var d struct {
		Feeds struct {
			Nodes []struct {
				e2eFeed
				PremiumKind string
			}
		}
	}
	if msg := e.gql(`{ feeds(filter: {type: [PREMIUM]}, first: 100) { nodes { premiumKind `+feedFields+` } } }`, nil, &d); msg != "" {
		e.t.Fatal(msg)
	}
	for _, f := range d.Feeds.Nodes {
		if f.PremiumKind == e.kind {
			return f.e2eFeed
		}
	}
	e.t.Fatalf("no %s premium feed", e.kind)
	return e2eFeed{}
}

// configure sets the feed's settings (FeedUpdateInput fields) and enables
// it; it returns the feed once its first run ended.
func (e premiumVendorE2E) configure(input map[string]any) e2eFeed {
	e.t.Helper()
	f := e.feed()
	if msg := e.gql(`mutation($id: ID!, $in: FeedUpdateInput!) { updateFeed(id: $id, input: $in) { id } }`,
		map[string]any{"id": f.ID, "in": input}, nil); msg != "" {
		e.t.Fatal(msg)
	}
	if msg := e.gql(`mutation($id: ID!) { setFeedEnabled(id: $id, enabled: true) { id } }`, map[string]any{"id": f.ID}, nil); msg != "" {
		e.t.Fatal(msg)
	}
	return e.waitRun("")
}

// waitRun waits for a finished run other than after.
func (e premiumVendorE2E) waitRun(after string) e2eFeed {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		f := e.feed()
		if f.LastRun != nil && f.LastRun.ID != after && f.LastRun.EndedAt != nil {
			return e.feed()
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("no run of %s ended in time", e.kind)
	return e2eFeed{}
}

// update saves input on the enabled feed, which runs it at once when the
// connection settings change, and returns the feed once that run ended.
func (e premiumVendorE2E) update(input map[string]any) e2eFeed {
	e.t.Helper()
	before := e.feed()
	prev := ""
	if before.LastRun != nil {
		prev = before.LastRun.ID
		if before.LastRun.EndedAt == nil {
			e.t.Fatalf("a run of %s is in flight before the update", e.kind)
		}
	}
	if msg := e.gql(`mutation($id: ID!, $in: FeedUpdateInput!) { updateFeed(id: $id, input: $in) { id } }`,
		map[string]any{"id": before.ID, "in": input}, nil); msg != "" {
		e.t.Fatal(msg)
	}
	return e.waitRun(prev)
}

// runNow runs the feed and returns it once the run ended.
func (e premiumVendorE2E) runNow() e2eFeed {
	e.t.Helper()
	before := e.feed()
	return e.waitRun(e.askRun(before.ID, before.LastRun))
}

// hostRequests returns the requests the mirror served for host (the
// built-in feeds ask it too).
func hostRequests(srv *vendortest.Server, host string) []*http.Request {
	var out []*http.Request
	for _, r := range srv.Requests() {
		if r.URL.Host == host {
			out = append(out, r)
		}
	}
	return out
}

func tsObject(updateID int, typ, value, status string, confidence int, modified time.Time) []byte {
	return []byte(fmt.Sprintf(`{"id": %d, "update_id": %d, "type": %q, "value": %q, "status": %q, "confidence": %d,
		"threatscore": 77, "itype": "c2_%s", "threat_type": "c2", "source": "Analyst", "subtype": null,
		"tags": [{"id": "t", "name": "E2E"}], "modified_ts": %q, "meta": {"severity": "high"}}`,
		updateID, updateID, typ, value, status, confidence, typ, modified.UTC().Format(time.RFC3339Nano)))
}

// TestPremiumThreatStreamE2E: THREAT_PLATFORM enabled with a username and
// API key reads ThreatStream through the mirror: exact IoCs over relative
// meta.next pages, a withdrawal and a resumed cursor on the next run, a
// persistent quota error and a cut body failing with the spec's messages,
// and the next run recovering from the last checkpoint.
func TestPremiumThreatStreamE2E(t *testing.T) {
	for name, dsn := range dbs {
		t.Run(name, func(t *testing.T) {
			now := time.Now()
			ts := &vendortest.ThreatStream{Username: "analyst", Key: "ts-e2e-key-0123456789", PageSize: 2, Objects: [][]byte{
				tsObject(10, "ip", "203.0.113.1", "active", 90, now.Add(-time.Hour)),
				tsObject(20, "domain", "bad.example.com", "active", -1, now.Add(-time.Hour)),
				tsObject(30, "url", "http://bad.example.com/x", "active", 60, now.Add(-time.Hour)),
				tsObject(40, "email", "a@example.com", "active", 60, now.Add(-time.Hour)),
				tsObject(50, "ip", "198.51.100.9", "active", 70, now.Add(-time.Hour)),
				tsObject(5, "ip", "192.0.2.5", "active", 70, now.AddDate(0, 0, -30)), // before the backfill
			}}
			srv := vendortest.New(t)
			srv.Handle("api.threatstream.com", ts)
			e := premiumVendorE2E{startBuiltinE2E(t, dsn(t), srv, nil), "THREAT_PLATFORM"}

			f := e.configure(map[string]any{"username": "analyst", "apiKey": ts.Key, "backfillDays": 7})
			want := []string{"198.51.100.9", "203.0.113.1", "bad.example.com", "http://bad.example.com/x"}
			if got := e.values(f.ID); f.Status != "SUCCESS" || !slices.Equal(got, want) || f.LastRun.Stored != 4 {
				t.Fatalf("first run: %s/%s %+v, IoCs %q; want %q", f.Status, f.StatusMessage, f.LastRun, got, want)
			}
			for _, i := range e.iocs(f.ID) {
				if i.Value == "bad.example.com" && (i.Score != 77 || !slices.Contains(i.Tags, "e2e")) {
					t.Errorf("confidence -1 takes threatscore: %+v", i)
				}
			}
			if n := len(hostRequests(srv, "api.threatstream.com")); n != 3 {
				t.Errorf("%d requests, want 3 pages", n)
			}
			if strings.Contains(e.stderr.String(), ts.Key) {
				t.Error("the API key is in the log")
			}

			// Withdrawn, and a new one: read from the cursor only.
			served := len(hostRequests(srv, "api.threatstream.com"))
			ts.Objects = append(ts.Objects,
				tsObject(60, "ip", "203.0.113.1", "inactive", 90, now),
				tsObject(70, "domain", "new.example.net", "active", 50, now))
			f = e.runNow()
			want = []string{"198.51.100.9", "bad.example.com", "http://bad.example.com/x", "new.example.net"}
			if got := e.values(f.ID); f.Status != "SUCCESS" || !slices.Equal(got, want) {
				t.Fatalf("second run: %s %+v, IoCs %q; want %q", f.Status, f.LastRun, got, want)
			}
			if q := hostRequests(srv, "api.threatstream.com")[served].URL.Query(); q.Get("update_id__gt") != "50" || q.Has("modified_ts__gt") {
				t.Errorf("second run asked %s, want update_id__gt=50", hostRequests(srv, "api.threatstream.com")[served].URL)
			}

			// A quota error that persists, then a body cut after a page.
			ts.FailStatus, ts.RetryAfter = 429, "0"
			f = e.runNow()
			if f.StatusMessage != "Surpassed Query Limit" || f.LastRun.ErrorKind != "Surpassed Query Limit" {
				t.Errorf("quota: %s %+v", f.StatusMessage, f.LastRun)
			}
			ts.FailStatus = 0
			ts.Objects = append(ts.Objects,
				tsObject(80, "ip", "203.0.113.80", "active", 50, now),
				tsObject(90, "ip", "203.0.113.90", "active", 50, now),
				tsObject(100, "ip", "203.0.113.100", "active", 50, now))
			ts.CutPage = 2
			served = len(hostRequests(srv, "api.threatstream.com"))
			f = e.runNow()
			if f.StatusMessage != "Connection Error" || f.LastRun.ErrorKind != "Connection Error" {
				t.Errorf("cut body: %s %+v", f.StatusMessage, f.LastRun)
			}
			ts.CutPage = 0
			served = len(hostRequests(srv, "api.threatstream.com"))
			f = e.runNow()
			if q := hostRequests(srv, "api.threatstream.com")[served].URL.Query(); q.Get("update_id__gt") != "90" {
				t.Errorf("after the cut page the run asked %s, want update_id__gt=90 (the page before it)", hostRequests(srv, "api.threatstream.com")[served].URL)
			}
			if got := e.values(f.ID); f.Status != "SUCCESS" || !slices.Contains(got, "203.0.113.100") || !slices.Contains(got, "203.0.113.80") {
				t.Errorf("recovered: %s, %q", f.Status, got)
			}

			// A key that is refused.
			// Saving it runs the feed at once: no Run now needed.
			f = e.update(map[string]any{"apiKey": "revoked-key-999"})
			if f.StatusMessage != "Invalid Credentials" || strings.Contains(f.LastRun.ErrorDetail, "revoked-key-999") {
				t.Errorf("refused key: %s %+v", f.StatusMessage, f.LastRun)
			}
		})
	}
}
