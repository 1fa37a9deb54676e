package server_test

import (
	"context"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/etopen"
	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/source/sourcetest"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// etOpenRules fetches etopen's test archive through the vendor mirror.
func etOpenRules(t *testing.T) []ioc.Indicator {
	t.Helper()
	files := map[string]string{}
	root := filepath.Join("..", "ingest", "builtin", "etopen", "testdata", "archive")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := vendortest.New(t)
	srv.Handle(vendortest.ETOpenHost, &vendortest.ETOpen{Archive: vendortest.TarGz(files)})
	var c sourcetest.Collector
	src := &etopen.Source{}
	src.Client = vendortest.MirrorClient(srv.URL)
	if _, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Since: time.Time{}}, &c); err != nil {
		t.Fatal(err)
	}
	return c.Indicators
}

// suricataCheck parses a rules file with suricata-update's rule parser
// (Debian package suricata-update) and returns what it could not parse.
const suricataCheck = `
import sys
from suricata.update import rule
bad, n = [], 0
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    r = rule.parse(line)
    if r is None or not r.enabled or not r.sid or not r.msg or r.action not in ("alert", "drop", "pass", "reject", "rejectsrc", "rejectdst", "rejectboth"):
        bad.append(line)
    n += 1
print(n)
for b in bad:
    print(b)
`

func TestExportRules(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		ctx := context.Background()
		feed := seedExport(t, st, 3) // feeds and a few IPs, which the export leaves out
		rules := etOpenRules(t)
		now := time.Now().UTC()
		if _, err := st.ApplyBatch(ctx, store.Batch{FeedID: feed, Retention: 24 * time.Hour, Now: now, Indicators: rules}); err != nil {
			t.Fatal(err)
		}
		extra := []ioc.Indicator{
			// A text over lines (a rule continued with backslashes, kept
			// as given) is exported on one line.
			{Kind: ioc.Rule, Value: ioc.RuleValue(2900001), Source: "custom", Score: 50,
				Text: "alert tcp any any -> any any (msg:\"ET POLICY Stored Over\n Two Lines\"; content:\"x\"; sid:2900001; rev:1;)"},
			// Expired but not swept yet: not live, not exported.
			{Kind: ioc.Rule, Value: ioc.RuleValue(2900002), Source: "custom", Score: 50, ValidUntil: now.Add(-time.Minute),
				Text: `alert tcp any any -> any any (msg:"ET POLICY Expired"; sid:2900002; rev:1;)`},
		}
		if _, err := st.ApplyBatch(ctx, store.Batch{FeedID: feed, Retention: 24 * time.Hour, Now: now.Add(-time.Hour), Indicators: extra}); err != nil {
			t.Fatal(err)
		}
		var wantSIDs []string
		for _, ind := range rules {
			if ind.Kind == ioc.Rule {
				wantSIDs = append(wantSIDs, strings.TrimPrefix(ind.Value, "sid:"))
			}
		}
		wantSIDs = append(wantSIDs, "2900001")
		slices.Sort(wantSIDs)

		r := f.do("GET", "/api/export/rules.rules", "", "", "", nil)
		if r.status != 401 {
			t.Errorf("without credentials: %d, want 401", r.status)
		}
		r = f.do("GET", "/api/export/rules.rules", "analyst", f.tenantKey, "", nil)
		if r.status != 200 || r.header.Get("Content-Type") != "text/plain; charset=utf-8" ||
			!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment; filename=tifeeds-rules-") {
			t.Fatalf("export: %d %v %s", r.status, r.header, r.body)
		}
		body := string(r.body)
		lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		if !strings.HasPrefix(lines[1], "# Source: tifeeds") || !strings.HasPrefix(lines[2], "# Generated: ") {
			t.Errorf("header: %q", lines[:3])
		}
		var sids []string
		for _, l := range lines {
			if strings.HasPrefix(l, "#") {
				continue
			}
			sid := between(l, "sid:", ";")
			sids = append(sids, sid)
		}
		slices.Sort(sids)
		if !slices.Equal(sids, wantSIDs) {
			t.Errorf("exported sids %q, want %q", sids, wantSIDs)
		}
		if !strings.Contains(body, `(msg:"ET POLICY Stored Over Two Lines";`) {
			t.Errorf("the multi-line text is not one line:\n%s", body)
		}
		checkSuricata(t, body, len(wantSIDs))

		for name, tc := range map[string]struct {
			query string
			want  []string
		}{
			"search text": {"?search=" + url.QueryEscape("Feodo Tracker"), []string{"2404300"}},
			"filter tag":  {"?filter=" + url.QueryEscape(`{"tag":"et cins"}`), []string{"2403300"}},
			"other types": {"?filter=" + url.QueryEscape(`{"type":["IP"]}`), nil},
			"with rules":  {"?filter=" + url.QueryEscape(`{"type":["IP","RULE"],"minScore":80}`), []string{"2030001", "2403300", "2404300"}},
			"bad filter":  {"?filter=" + url.QueryEscape(`{"nope":1}`), []string{"422"}},
		} {
			t.Run(name, func(t *testing.T) {
				r := f.do("GET", "/api/export/rules.rules"+tc.query, "admin", adminKey, "", nil)
				if r.status != 200 {
					if !slices.Equal([]string{itoa(r.status)}, tc.want) {
						t.Errorf("status %d: %s", r.status, r.body)
					}
					return
				}
				var got []string
				for _, l := range strings.Split(strings.TrimSuffix(string(r.body), "\n"), "\n") {
					if !strings.HasPrefix(l, "#") {
						got = append(got, between(l, "sid:", ";"))
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("sids %q, want %q", got, tc.want)
				}
			})
		}
	})
}

// checkSuricata runs suricata-update's rule parser over the file and
// fails for any rule it does not read as an enabled rule with sid and msg.
func checkSuricata(t *testing.T, body string, want int) {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import suricata.update.rule").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("suricata-update's rule parser is not installed (Debian package suricata-update; .ci/run installs it)")
		}
		t.Skip("suricata-update's rule parser is not installed (Debian package suricata-update)")
	}
	file := filepath.Join(t.TempDir(), "export.rules")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", suricataCheck, file).CombinedOutput()
	if err != nil {
		t.Fatalf("suricata-update's parser: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] != itoa(want) || len(lines) > 1 {
		t.Errorf("suricata-update read %s rules, want %d; not parsed:\n%s", lines[0], want, strings.Join(lines[1:], "\n"))
	}
}

// TestExportCertSHA1: a certificate fingerprint exports as its own type,
// apart from a file SHA1 with the same digits.
func TestExportCertSHA1(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		feed := seedExport(t, st, 1)
		const fp = "3f2a5b3c8d1e0f9a7b6c5d4e3f2a1b0c9d8e7f6a"
		if _, err := st.ApplyBatch(context.Background(), store.Batch{FeedID: feed, Retention: 24 * time.Hour, Indicators: []ioc.Indicator{
			{Kind: ioc.CertSHA1, Value: fp, Source: "sslbl", Score: 80, Tags: []string{"dridex c&c"}},
			{Kind: ioc.SHA1, Value: fp, Source: "files", Score: 40},
		}}); err != nil {
			t.Fatal(err)
		}
		r := f.do("GET", "/api/export/iocs.csv?columns=type,value,score,tags,sources&filter="+url.QueryEscape(`{"type":["CERT_SHA1"]}`), "admin", adminKey, "", nil)
		if got := readCSV(t, r.body); len(got) != 2 || strings.Join(got[1], ",") != "CERT_SHA1,"+fp+",80,dridex c&c,TSV_acme/sslbl" {
			t.Errorf("CERT_SHA1 export: %q", got)
		}
		r = f.do("GET", "/api/export/iocs.txt?filter="+url.QueryEscape(`{"type":["CERT_SHA1","SHA1"]}`), "admin", adminKey, "", nil)
		if got := string(r.body); got != fp+"\n"+fp+"\n" {
			t.Errorf("txt export of both kinds: %q", got)
		}
	})
}
