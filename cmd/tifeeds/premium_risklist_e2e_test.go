package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
)

// e2eBacklogRun is a run of the history with what a constant-rate or
// multi-list kind records.
type e2eBacklogRun struct {
	ID                 string
	EndedAt            *time.Time
	Stored, Rejected   int
	ErrorKind          string
	ErrorDetail        string
	Note               string
	BacklogWritten     int64
	BacklogTotal       int64
	ExpectedCompletion *time.Time
	Rejections         []struct {
		Position int
		Reason   string
	}
}

// runHistory returns the feed's runs, newest first.
func (e premiumVendorE2E) runHistory(feedID string) []e2eBacklogRun {
	e.t.Helper()
	var d struct{ FeedRuns []e2eBacklogRun }
	if msg := e.gql(`query($id: ID!) { feedRuns(feedId: $id, first: 50) { id endedAt stored rejected errorKind
		errorDetail note backlogWritten backlogTotal expectedCompletion rejections { position reason } } }`,
		map[string]any{"id": feedID}, &d); msg != "" {
		e.t.Fatal(msg)
	}
	return d.FeedRuns
}

// lastHistoryRun returns the newest run of the history.
func (e premiumVendorE2E) lastHistoryRun(feedID string) e2eBacklogRun {
	e.t.Helper()
	runs := e.runHistory(feedID)
	if len(runs) == 0 {
		e.t.Fatal("no run in the history")
	}
	return runs[0]
}

// cursor returns the feed's cursor.
func (e premiumVendorE2E) cursor(feedID string) string {
	e.t.Helper()
	var d struct{ Feed struct{ Cursor string } }
	if msg := e.gql(`query($id: ID!) { feed(id: $id) { cursor } }`, map[string]any{"id": feedID}, &d); msg != "" {
		e.t.Fatal(msg)
	}
	return d.Feed.Cursor
}

// rfCSV is a risk list in Recorded Future's csv/splunk format.
func rfCSV(rows ...string) string {
	return `"Name","Risk","RiskString","EvidenceDetails"` + "\n" + strings.Join(rows, "\n") + "\n"
}

func rfRow(name string, risk int, rule string) string {
	return fmt.Sprintf(`"%s","%d","1/64","{""EvidenceDetails"": [{""Rule"": ""%s"", ""Criticality"": 3.0}]}"`, name, risk, rule)
}

func rfIPs(last ...int) string {
	var rows []string
	for _, n := range last {
		rows = append(rows, rfRow(fmt.Sprintf("203.0.113.%d", n), 90, "Current C&C Server"))
	}
	return rfCSV(rows...)
}

// TestPremiumRiskListE2E: RISK_LIST enabled with an API key reads the four
// Recorded Future lists through the mirror at the constant rate set by
// TIFEEDS_RISK_LIST_RATE (0.125 an hour, polled every 24 hours: a share of
// 3 IoCs a poll): the lists go on across polls from the cursor, each run's
// progress (written / total, expected completion) is in the run history,
// an unchanged list is not downloaded, a changed list expires what it
// dropped only once it was written whole, a failed list is named while the
// others are stored, and quota, cut-body and key failures show the spec's
// messages.
func TestPremiumRiskListE2E(t *testing.T) {
	for name, dsn := range dbs {
		t.Run(name, func(t *testing.T) {
			const token = "rf-e2e-token-0123456789"
			const sha256 = "275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f"
			rf := vendortest.NewRecordedFuture(token)
			rf.SetList("ip", rfIPs(1, 2, 3, 4))
			rf.SetList("domain", rfCSV(rfRow("a.example.com", 80, "Recent Phishing Host"), rfRow("b.example.com", 70, "")))
			rf.SetList("url", rfCSV(rfRow("http://c.example.com/x", 95, "Recently Reported by Insikt Group")))
			rf.SetList("hash", rfCSV(rfRow(sha256, 89, "Positive Malware Verdict"), rfRow(strings.Repeat("ab", 64), 60, "")))
			srv := vendortest.New(t)
			srv.Handle(vendortest.RecordedFutureHost, rf)
			e := premiumVendorE2E{startBuiltinE2E(t, dsn(t), srv, map[string]string{"TIFEEDS_RISK_LIST_RATE": "0.125"}), "RISK_LIST"}

			// checkRun checks the last run of the history: stored, the
			// progress, and the expected completion polls×24 h after its end.
			checkRun := func(step string, f e2eFeed, stored int, written, total int64, polls int) e2eBacklogRun {
				t.Helper()
				r := e.lastHistoryRun(f.ID)
				if r.ID != f.LastRun.ID || r.Stored != stored || r.BacklogWritten != written || r.BacklogTotal != total {
					t.Errorf("%s: run %+v; want stored %d, progress %d/%d", step, r, stored, written, total)
				}
				switch {
				case polls == 0 && r.ExpectedCompletion != nil:
					t.Errorf("%s: everything written, yet completion expected at %v", step, r.ExpectedCompletion)
				case polls > 0 && (r.ExpectedCompletion == nil || r.EndedAt == nil ||
					r.ExpectedCompletion.Sub(*r.EndedAt).Round(time.Minute) != time.Duration(polls)*24*time.Hour):
					t.Errorf("%s: expected completion %v for a run ended %v, want %d polls later", step, r.ExpectedCompletion, r.EndedAt, polls)
				}
				return r
			}

			// Poll 1: three of the nine rows; the other lists are sized.
			f := e.configure(map[string]any{"apiKey": token})
			if got := e.values(f.ID); f.Status != "SUCCESS" || !slices.Equal(got, []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"}) {
				t.Fatalf("poll 1: %s/%s %+v, IoCs %q\n%s", f.Status, f.StatusMessage, f.LastRun, got, e.stderr.String())
			}
			if r := checkRun("poll 1", f, 3, 3, 9, 2); !strings.Contains(r.Note, "share of 3 IoCs (0.125 an hour)") {
				t.Errorf("poll 1 note %q", r.Note)
			}
			if c := e.cursor(f.ID); !strings.Contains(c, `"next":"ip"`) {
				t.Errorf("poll 1 cursor %s", c)
			}
			for _, i := range e.iocs(f.ID) {
				if i.Type != "IP" || i.Score != 90 || !slices.Equal(i.Tags, []string{"current c&c server"}) {
					t.Errorf("poll 1 IoC %+v", i)
				}
			}

			// Poll 2: the rest of ip, and domain written to its last row.
			f = e.runNow()
			want := []string{"203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4", "a.example.com", "b.example.com"}
			if got := e.values(f.ID); !slices.Equal(got, want) {
				t.Fatalf("poll 2: IoCs %q, want %q", got, want)
			}
			checkRun("poll 2", f, 3, 6, 9, 1)

			// Poll 3: url and hash (its SHA-512 rejected): all written.
			f = e.runNow()
			want = append(want, "http://c.example.com/x", sha256)
			slices.Sort(want)
			if got := e.values(f.ID); !slices.Equal(got, want) || f.Status != "SUCCESS" {
				t.Fatalf("poll 3: %s, IoCs %q, want %q", f.Status, got, want)
			}
			if r := checkRun("poll 3", f, 2, 9, 9, 0); r.Rejected != 1 || len(r.Rejections) != 1 ||
				!strings.Contains(r.Rejections[0].Reason, "not a kind tifeeds keeps") {
				t.Errorf("poll 3 rejections %+v", r)
			}
			downloads := map[string]int{}
			for _, l := range []string{"ip", "domain", "url", "hash"} {
				downloads[l] = rf.Downloads(l)
			}
			// ip twice (its two polls); the others once sized, once written.
			if downloads["ip"] != 2 || downloads["domain"] != 2 || downloads["url"] != 2 || downloads["hash"] != 2 {
				t.Errorf("downloads after the pass: %v", downloads)
			}

			// Poll 4: nothing changed: HEAD only, and the run says so.
			heads := rf.Heads("ip")
			f = e.runNow()
			if f.LastRun.Note != "the list has not changed since the last run" || f.LastRun.Stored != 0 || rf.Heads("ip") != heads+1 {
				t.Errorf("unchanged lists: %+v, heads %d→%d", f.LastRun, heads, rf.Heads("ip"))
			}
			for l, n := range downloads {
				if rf.Downloads(l) != n {
					t.Errorf("unchanged list %s downloaded again", l)
				}
			}

			// A changed ip list: .1 dropped, .5 added. Its first share does
			// not expire .1 (the list is not written whole yet); the next does.
			rf.SetList("ip", rfIPs(2, 3, 4, 5))
			f = e.runNow()
			if got := e.values(f.ID); !slices.Contains(got, "203.0.113.1") || slices.Contains(got, "203.0.113.5") {
				t.Errorf("poll 5: IoCs %q: .1 expired before the list was written whole, or .5 beyond the share", got)
			}
			checkRun("poll 5", f, 3, 8, 9, 1)
			f = e.runNow()
			if got := e.values(f.ID); slices.Contains(got, "203.0.113.1") || !slices.Contains(got, "203.0.113.5") ||
				!strings.Contains(f.LastRun.Note, "1 IoCs no longer listed expired") {
				t.Errorf("poll 6: IoCs %q, note %q", got, f.LastRun.Note)
			}
			checkRun("poll 6", f, 1, 9, 9, 0)

			// The hash list fails: named in the detail, while the changed url
			// list is stored and expires what it dropped.
			rf.SetList("url", rfCSV(rfRow("http://c.example.com/y", 95, "")))
			rf.Fail("hash", 503, "3600")
			f = e.runNow()
			if f.Status != "ERROR" || f.StatusMessage != "Fetching Data Error" || !strings.Contains(f.LastRun.ErrorDetail, "risk list hash failed") ||
				strings.Contains(f.LastRun.ErrorDetail, "risk list url") {
				t.Errorf("failed hash list: %s/%s %+v", f.Status, f.StatusMessage, f.LastRun)
			}
			if got := e.values(f.ID); !slices.Contains(got, "http://c.example.com/y") || slices.Contains(got, "http://c.example.com/x") ||
				!slices.Contains(got, sha256) {
				t.Errorf("after the failed hash list: IoCs %q", got)
			}
			rf.Fail("hash", 0, "")

			// A quota error on every list.
			for _, l := range []string{"ip", "domain", "url", "hash"} {
				rf.Fail(l, 429, "3600")
			}
			f = e.runNow()
			if f.StatusMessage != "Surpassed Query Limit" || f.LastRun.ErrorKind != "Surpassed Query Limit" ||
				!strings.Contains(f.LastRun.ErrorDetail, "risk list ip failed") || !strings.Contains(f.LastRun.ErrorDetail, "risk list hash failed") {
				t.Errorf("quota: %s %+v", f.StatusMessage, f.LastRun)
			}
			for _, l := range []string{"ip", "domain", "url", "hash"} {
				rf.Fail(l, 0, "")
			}

			// A cut body, then the list read on the next run.
			rf.SetList("ip", rfIPs(2, 6))
			rf.SetCut("ip", true)
			f = e.runNow()
			if f.StatusMessage != "Connection Error" || !strings.Contains(f.LastRun.ErrorDetail, "risk list ip failed") {
				t.Errorf("cut body: %s %+v", f.StatusMessage, f.LastRun)
			}
			if got := e.values(f.ID); !slices.Contains(got, "203.0.113.3") {
				t.Errorf("a cut list expired values: %q", got)
			}
			rf.SetCut("ip", false)
			f = e.runNow()
			if got := e.values(f.ID); f.Status != "SUCCESS" || !slices.Contains(got, "203.0.113.6") || slices.Contains(got, "203.0.113.3") {
				t.Errorf("after the cut: %s %+v, IoCs %q", f.Status, f.LastRun, got)
			}

			// A token that is refused.
			// Saving it runs the feed at once: no Run now needed.
			f = e.update(map[string]any{"apiKey": "revoked-rf-token"})
			if f.StatusMessage != "Invalid Credentials" || strings.Contains(f.LastRun.ErrorDetail, "revoked-rf-token") {
				t.Errorf("refused token: %s %+v", f.StatusMessage, f.LastRun)
			}
			if strings.Contains(e.stderr.String(), token) || strings.Contains(e.stderr.String(), "revoked-rf-token") {
				t.Error("the token is in the log")
			}

			// The run history keeps every run's progress.
			runs := e.runHistory(f.ID)
			if len(runs) != 11 || runs[len(runs)-1].BacklogWritten != 3 || runs[len(runs)-1].BacklogTotal != 9 {
				t.Errorf("history of %d runs, the first %+v", len(runs), runs[len(runs)-1])
			}
		})
	}
}
