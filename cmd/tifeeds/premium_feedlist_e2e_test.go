package main

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
)

// feedListE2E drives one FEED_LIST feed of a running server by id.
type feedListE2E struct {
	*builtinE2E
	id string
}

type feedListState struct {
	ID, Status, StatusMessage string
	LastRun                   *e2eRun
}

func (e *feedListE2E) state() feedListState {
	e.t.Helper()
	var d struct{ Feed feedListState }
	if msg := e.gql(`query($id: ID!) { feed(id: $id) { id status statusMessage lastRun { id endedAt stored errorKind errorDetail note } } }`,
		map[string]any{"id": e.id}, &d); msg != "" {
		e.t.Fatal(msg)
	}
	return d.Feed
}

// waitRun waits for a finished run other than after and returns the feed.
func (e *feedListE2E) waitRun(after string) feedListState {
	e.t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if f := e.state(); f.LastRun != nil && f.LastRun.ID != after && f.LastRun.EndedAt != nil {
			return e.state()
		}
	}
	e.t.Fatal("no run of the feed-list feed ended in time")
	return feedListState{}
}

func (e *feedListE2E) runNow() feedListState {
	e.t.Helper()
	return e.waitRun(e.askRun(e.id, e.state().LastRun))
}

// live returns how many live IoCs the feed has.
func (e *feedListE2E) live() int {
	e.t.Helper()
	// The feed's own count is exact; iocs' totalCount stops at 10,000 under
	// a filter.
	var d struct{ Feed struct{ IocCount int } }
	if msg := e.gql(`query($f: ID!) { feed(id: $f) { iocCount } }`, map[string]any{"f": e.id}, &d); msg != "" {
		e.t.Fatal(msg)
	}
	return d.Feed.IocCount
}

// TestPremiumFeedListE2E runs a FEED_LIST feed created through GraphQL
// against a loopback SOCRadar-like platform (its endpoint is the user's and
// is not mirrored: the server runs with --feed-allow-private).
func TestPremiumFeedListE2E(t *testing.T) {
	for name, dsn := range dbs {
		t.Run(name, func(t *testing.T) {
			sim := &vendortest.SOCRadar{Key: "socradar-e2e-key"}
			platform := httptest.NewServer(sim)
			defer platform.Close()
			sim.Set("finance", vendortest.SOCRadarDocument([]vendortest.SOCRadarItem{
				{Feed: "203.0.113.7", FeedType: "ip", FirstSeen: "2026-01-01 10:00:00", LatestSeen: "2026-01-02 10:00:00",
					Maintainer: "SOCRadar", ExtraInfo: map[string]any{"score": 80, "seen_count": 3}},
				{Feed: "Bad.Example.COM", FeedType: "hostname", Maintainer: "SOCRadar"},
				{Feed: "https://phish.example.net/login", FeedType: "url", Maintainer: "SOCRadar", ExtraInfo: map[string]any{"score": 60}},
				{Feed: "D7A8FBB307D7809469CA9ABCB0082E4F8D5651E46D3CDB762D02D0BF37C9E592", FeedType: "hash", Maintainer: "SOCRadar"},
				{Feed: "198.51.100.0/24", FeedType: "cidr", Maintainer: "SOCRadar"},
			}, true))
			e := &feedListE2E{builtinE2E: startBuiltinE2E(t, dsn(t), vendortest.New(t),
				map[string]string{"TIFEEDS_FEED_ALLOW_PRIVATE": "true"})}
			var created struct{ CreatePremiumFeed struct{ ID string } }
			if msg := e.gql(`mutation($in: PremiumFeedInput!) { createPremiumFeed(input: $in) { id } }`,
				map[string]any{"in": map[string]any{"kind": "FEED_LIST", "name": "finance",
					"apiEndpoint": vendortest.SOCRadarEndpoint(platform.URL, "finance", "socradar-e2e-key")}}, &created); msg != "" {
				t.Fatal(msg)
			}
			e.id = created.CreatePremiumFeed.ID
			if msg := e.gql(`mutation($id: ID!) { setFeedEnabled(id: $id, enabled: true) { id } }`, map[string]any{"id": e.id}, nil); msg != "" {
				t.Fatal(msg)
			}
			f := e.waitRun("")
			if f.StatusMessage != "Success" || f.LastRun.Stored != 4 {
				t.Fatalf("first run: %q %+v", f.StatusMessage, f.LastRun)
			}
			var got []string
			for _, i := range e.iocs(e.id) {
				got = append(got, fmt.Sprintf("%s %s %d %v", i.Type, i.Value, i.Score, i.Tags))
			}
			want := []string{
				"IP 203.0.113.7 80 [socradar]",
				"DOMAIN bad.example.com 90 [socradar]",
				"SHA256 d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592 90 [socradar]",
				"URL https://phish.example.net/login 60 [socradar]",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("IoCs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}

			// A changed document: what it no longer lists expires.
			sim.Set("finance", vendortest.SOCRadarDocument([]vendortest.SOCRadarItem{
				{Feed: "203.0.113.7", FeedType: "ip", Maintainer: "SOCRadar", ExtraInfo: map[string]any{"score": 80}},
				{Feed: "bad.example.com", FeedType: "domain", Maintainer: "SOCRadar"},
			}, false))
			f = e.runNow()
			if vs := e.values(e.id); f.StatusMessage != "Success" || strings.Join(vs, " ") != "203.0.113.7 bad.example.com" ||
				!strings.Contains(f.LastRun.Note, "2 IoCs no longer listed expired") {
				t.Errorf("after the change: %v, run %+v", vs, f.LastRun)
			}

			// 50,003 indicators: the first poll stores 50,000, the next
			// goes on; the walk's end keeps the first poll's and expires
			// what the document dropped.
			sim.Set("finance", vendortest.SOCRadarDocument(append(vendortest.SOCRadarIPs(0, 50002),
				vendortest.SOCRadarItem{Feed: "203.0.113.7", FeedType: "ip"}), false))
			f = e.runNow()
			if f.StatusMessage != "Success" || f.LastRun.Stored != 50000 || !strings.Contains(f.LastRun.Note, "50000 IoCs per poll") {
				t.Fatalf("first capped poll: %q %+v", f.StatusMessage, f.LastRun)
			}
			f = e.runNow()
			if n := e.live(); f.StatusMessage != "Success" || f.LastRun.Stored != 3 || n != 50003 ||
				!strings.Contains(f.LastRun.Note, "1 IoCs no longer listed expired") {
				t.Fatalf("second poll: %q %+v, %d live IoCs", f.StatusMessage, f.LastRun, n)
			}
			sim.Set("finance", vendortest.SOCRadarDocument(vendortest.SOCRadarIPs(0, 3), false))
			if f = e.runNow(); f.LastRun.Stored != 3 || e.live() != 3 {
				t.Fatalf("back to 3: %+v, %d live", f.LastRun, e.live())
			}

			// The platform's signals, each a run of its own; the key never
			// shows in the run's detail.
			for _, tc := range []struct {
				name, message, detail string
				set                   func()
			}{
				{"401", "Invalid Credentials", "401", func() { sim.SetKey("rotated") }},
				{"403", "Invalid Credentials", "403", func() { sim.SetKey("socradar-e2e-key"); sim.Fail(403, 0, "") }},
				{"429", "Surpassed Query Limit", "429", func() { sim.Fail(429, 0, "0") }},
				{"5xx", "Fetching Data Error", "503", func() { sim.Fail(503, 0, "3600") }},
				{"cut body", "Connection Error", "", func() { sim.Fail(0, 0, ""); sim.SetBody(true, 0, 0) }},
				{"announced over 100 MB", "Fetching Data Error", "over the cap of 100 MB", func() { sim.SetBody(false, 100<<20+1, 0) }},
				{"over 100 MB", "Fetching Data Error", "over the cap of 100 MB", func() { sim.SetBody(false, 0, 100<<20) }},
			} {
				tc.set()
				f = e.runNow()
				if f.StatusMessage != tc.message || f.Status != "ERROR" || !strings.Contains(f.LastRun.ErrorDetail, tc.detail) ||
					strings.Contains(f.LastRun.ErrorDetail, "socradar-e2e-key") {
					t.Errorf("%s: %q %q %+v", tc.name, f.StatusMessage, f.Status, f.LastRun)
				}
			}
			if n := e.live(); n != 3 {
				t.Errorf("%d live IoCs after the failed runs, want 3", n)
			}
			if logs := e.stderr.String(); strings.Contains(logs, "socradar-e2e-key") {
				t.Error("the server's log shows the API key")
			}
			// Back to normal, the feed recovers.
			sim.SetBody(false, 0, 0)
			if f = e.runNow(); f.StatusMessage != "Success" {
				t.Errorf("after the failures: %q %+v", f.StatusMessage, f.LastRun)
			}
		})
	}
}
