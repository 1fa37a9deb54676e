package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
)

// gtiObject is one entry of a threat-list package; score < 0 leaves the
// threat score out.
func gtiObject(typ, id, url string, score int, verdict string, tags ...string) string {
	attrs := map[string]any{"tags": tags, "gti_assessment": map[string]any{"verdict": map[string]any{"value": verdict}}}
	if score >= 0 {
		attrs["gti_assessment"].(map[string]any)["threat_score"] = map[string]any{"value": score}
	}
	if url != "" {
		attrs["url"] = url
	}
	b, _ := json.Marshal(map[string]any{"data": map[string]any{"id": id, "type": typ, "attributes": attrs}})
	return string(b)
}

func gtiPackage(objects ...string) string {
	return `{"iocs": [` + strings.Join(objects, ",") + `]}`
}

// TestPremiumGTIE2E: THREAT_INTEL_API enabled with an API key reads the
// three threat lists' hourly packages through the mirror: the first run
// bounded by the backfill days, exact IoCs (benign verdicts skipped and
// counted, no threat score 50), the feed's retention on what it stores,
// the cursor per list (an hour not published yet asked again, an older
// empty hour passed), a failed list named while the others are stored,
// quota, cut-body and key failures with the spec's messages.
func TestPremiumGTIE2E(t *testing.T) {
	for name, dsn := range dbs {
		t.Run(name, func(t *testing.T) {
			// The hours below are counted from the current one: keep the
			// test inside one hour.
			if left := time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)); left < 20*time.Second {
				time.Sleep(left + time.Second)
			}
			now := time.Now().UTC()
			hour := func(back int) string {
				return now.Truncate(time.Hour).Add(-time.Duration(back) * time.Hour).Format("2006010215")
			}
			const key = "gti-e2e-key-0123456789"
			const sha = "275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f"
			g := vendortest.NewGTI(key)
			// A 404 for an hour ended less than 3 h ago stops the list there
			// (not published yet): each list's packages up to its last hour
			// are there, empty ones included.
			g.SetPackage("malware", hour(3), gtiPackage(
				gtiObject("file", strings.ToUpper(sha), "", 88, "VERDICT_MALICIOUS", "Trojan", "none"),
				gtiObject("ip_address", "198.51.100.20", "", 10, "VERDICT_BENIGN")))
			g.SetPackage("malware", hour(2), gtiPackage())
			g.SetPackage("malware", hour(1), gtiPackage())
			g.SetPackage("malware", hour(40), gtiPackage( // before the backfill day
				gtiObject("ip_address", "192.0.2.40", "", 90, "VERDICT_MALICIOUS")))
			g.SetPackage("phishing", hour(5), gtiPackage(
				gtiObject("url", "u-1", "http://login.example.com/owa", 75, "VERDICT_MALICIOUS"),
				gtiObject("domain", "phish.example.net", "", -1, "")))
			g.SetPackage("malicious-network-infrastructure", hour(3), gtiPackage(
				gtiObject("ip_address", "203.0.113.9", "", 70, "VERDICT_MALICIOUS", "C2")))
			g.SetPackage("malicious-network-infrastructure", hour(2), gtiPackage())
			srv := vendortest.New(t)
			srv.Handle(vendortest.GTIHost, g)
			e := premiumVendorE2E{startBuiltinE2E(t, dsn(t), srv, nil), "THREAT_INTEL_API"}

			f := e.configure(map[string]any{"apiKey": key, "backfillDays": 1, "retentionPeriod": 30})
			got := e.iocs(f.ID)
			want := []e2eIoC{
				{"URL", "http://login.example.com/owa", 75, []string{"phishing"}},
				{"IP", "203.0.113.9", 70, []string{"c2", "malicious-network-infrastructure"}},
				{"SHA256", sha, 88, []string{"malware", "trojan"}},
				{"DOMAIN", "phish.example.net", 50, []string{"phishing"}},
			}
			slices.SortFunc(want, func(a, b e2eIoC) int { return strings.Compare(a.Value, b.Value) })
			if f.Status != "SUCCESS" || !slices.EqualFunc(got, want, func(a, b e2eIoC) bool {
				return a.Type == b.Type && a.Value == b.Value && a.Score == b.Score && slices.Equal(a.Tags, b.Tags)
			}) {
				t.Fatalf("first run: %s/%s %+v\nIoCs %+v\nwant %+v\n%s", f.Status, f.StatusMessage, f.LastRun, got, want, e.stderr.String())
			}
			r := e.lastHistoryRun(f.ID)
			if r.Stored != 4 || r.Rejected != 1 || len(r.Rejections) != 1 || r.Rejections[0].Reason != "skipped: benign verdict" {
				t.Errorf("first run: %+v", r)
			}
			if g.Asked("malware", hour(40)) != 0 || g.Asked("malware", hour(24)) != 1 {
				t.Errorf("first run asked the hour 40 h ago %d times, 24 h ago %d times: want the backfill day only",
					g.Asked("malware", hour(40)), g.Asked("malware", hour(24)))
			}
			// Retention is the feed's: 30 days.
			var exp struct {
				Iocs struct {
					Nodes []struct{ ExpirationDate time.Time }
				}
			}
			if msg := e.gql(`query($f: ID) { iocs(filter: {feedId: $f}, first: 10) { nodes { expirationDate } } }`,
				map[string]any{"f": f.ID}, &exp); msg != "" {
				t.Fatal(msg)
			}
			for _, n := range exp.Iocs.Nodes {
				if d := n.ExpirationDate.Sub(now); d < 29*24*time.Hour || d > 31*24*time.Hour {
					t.Errorf("expires in %v, want the feed's 30 days", d)
				}
			}
			// Per list, the last hour read: malware up to the last hour
			// ended; mni before the last hour, not published yet; phishing
			// passed the hours without a package older than the grace of
			// 3 h, and stopped at the first one within it.
			var cur map[string]string
			if err := json.Unmarshal([]byte(e.cursor(f.ID)), &cur); err != nil {
				t.Fatal(err)
			}
			if wantCur := map[string]string{"malware": hour(1), "phishing": hour(4), "malicious-network-infrastructure": hour(2)}; !maps.Equal(cur, wantCur) {
				t.Errorf("cursor %v, want %v", cur, wantCur)
			}
			if strings.Contains(e.stderr.String(), key) {
				t.Error("the API key is in the log")
			}

			// The phishing list fails; mni's late package is read all the
			// same, and the run names the failed list.
			g.SetPackage("malicious-network-infrastructure", hour(1), gtiPackage(
				gtiObject("domain", "c2.example.org", "", 95, "VERDICT_MALICIOUS")))
			g.Fail("phishing", 503, "3600")
			f = e.runNow()
			if f.Status != "ERROR" || f.StatusMessage != "Fetching Data Error" ||
				!strings.Contains(f.LastRun.ErrorDetail, "threat list phishing failed") || strings.Contains(f.LastRun.ErrorDetail, "threat list malware") {
				t.Errorf("failed phishing list: %s/%s %+v", f.Status, f.StatusMessage, f.LastRun)
			}
			if !slices.Contains(e.values(f.ID), "c2.example.org") || g.Asked("malicious-network-infrastructure", hour(2)) != 1 ||
				g.Asked("malware", hour(1)) != 1 {
				t.Errorf("after the failed list: IoCs %q; mni hour 2 asked %d, malware hour 1 asked %d (once each)",
					e.values(f.ID), g.Asked("malicious-network-infrastructure", hour(2)), g.Asked("malware", hour(1)))
			}
			if c := e.cursor(f.ID); !strings.Contains(c, `"phishing":"`+hour(4)+`"`) || !strings.Contains(c, `"malicious-network-infrastructure":"`+hour(1)+`"`) {
				t.Errorf("cursor after the failed list: %s", c)
			}
			g.Fail("phishing", 0, "")

			// A quota error on every list (malware and mni are up to date:
			// only phishing asks).
			for _, l := range []string{"malware", "phishing", "malicious-network-infrastructure"} {
				g.Fail(l, 429, "3600")
			}
			f = e.runNow()
			if f.StatusMessage != "Surpassed Query Limit" || !strings.Contains(f.LastRun.ErrorDetail, "threat list phishing failed") {
				t.Errorf("quota: %s %+v", f.StatusMessage, f.LastRun)
			}
			for _, l := range []string{"malware", "phishing", "malicious-network-infrastructure"} {
				g.Fail(l, 0, "")
			}

			// The phishing package of 3 h ago, published late, cut mid-way;
			// then read whole.
			g.SetPackage("phishing", hour(3), gtiPackage(
				gtiObject("url", "u-2", "http://login.example.com/a", 60, "VERDICT_MALICIOUS"),
				gtiObject("url", "u-3", "http://login.example.com/b", 60, "VERDICT_MALICIOUS"),
				gtiObject("url", "u-4", "http://login.example.com/c", 60, "VERDICT_MALICIOUS")))
			g.SetCut("phishing", true)
			f = e.runNow()
			if f.StatusMessage != "Connection Error" || !strings.Contains(f.LastRun.ErrorDetail, "threat list phishing failed") {
				t.Errorf("cut package: %s %+v", f.StatusMessage, f.LastRun)
			}
			g.SetCut("phishing", false)
			f = e.runNow()
			if got := e.values(f.ID); f.Status != "SUCCESS" || !slices.Contains(got, "http://login.example.com/c") {
				t.Errorf("after the cut: %s %+v, IoCs %q", f.Status, f.LastRun, got)
			}
			if c := e.cursor(f.ID); !strings.Contains(c, `"phishing":"`+hour(3)+`"`) {
				t.Errorf("cursor after the cut package was read: %s", c)
			}

			// A key that is refused.
			// Saving it runs the feed at once: no Run now needed.
			f = e.update(map[string]any{"apiKey": "revoked-gti-key"})
			if f.StatusMessage != "Invalid Credentials" || strings.Contains(f.LastRun.ErrorDetail, "revoked-gti-key") {
				t.Errorf("refused key: %s %+v", f.StatusMessage, f.LastRun)
			}
			if strings.Contains(e.stderr.String(), "revoked-gti-key") {
				t.Error("the refused key is in the log")
			}
		})
	}
}
