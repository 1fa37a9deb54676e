package etrep

import (
	"context"
	"errors"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ioc"
)

const testCode = "7319054826153047"

func newVendor(t *testing.T) *vendortest.ETReputation {
	return &vendortest.ETReputation{
		Code: testCode, IPRep: vendortest.Testdata(t, "iprepdata.json"), DomainRep: vendortest.Testdata(t, "domainrepdata.json"),
		Compromised: vendortest.Testdata(t, "compromised-ips.txt"), LastModified: time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC),
	}
}

func newSource(t *testing.T, h *vendortest.ETReputation) (*Source, *vendortest.Server) {
	t.Helper()
	srv := vendortest.New(t)
	srv.Handle("rules.emergingthreatspro.com", h)
	srv.Handle("rules.emergingthreats.net", h)
	return &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), Sleep: func(context.Context, time.Duration) error { return nil }}}, srv
}

type want struct {
	kind   ioc.Kind
	value  string
	source string
	score  int
	tags   []string
}

func check(t *testing.T, rec *vendortest.Recorder, cases map[string]want) {
	t.Helper()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := rec.Find(c.kind, c.value)
			if !ok {
				t.Fatalf("no %s %s among %v", c.kind, c.value, rec.Indicators)
			}
			if got.Score != c.score || !slices.Equal(got.Tags, c.tags) || got.Source != c.source {
				t.Errorf("got score %d tags %q source %q, want %d %q %q", got.Score, got.Tags, got.Source, c.score, c.tags, c.source)
			}
		})
	}
	if len(rec.Indicators) != len(cases) {
		t.Errorf("%d indicators, want %d: %v", len(rec.Indicators), len(cases), rec.Indicators)
	}
}

func checkRejected(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("rejected %q, want %q", got, want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("rejected[%d] = %q, want ... %q", i, got[i], w)
		}
	}
}

func TestFetchWithCode(t *testing.T) {
	src, srv := newSource(t, newVendor(t))
	var rec vendortest.Recorder
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Feed: source.Feed{Key: testCode}}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	const ip, dom = "et-reputation-ip", "et-reputation-domain"
	check(t, &rec, map[string]want{
		"top score is 100":           {ioc.IP, "203.0.113.30", ip, 100, []string{"cnc"}},
		"max over categories":        {ioc.IP, "203.0.113.31", ip, 75, []string{"brute_forcer", "scanner"}},
		"numeric score":              {ioc.IP, "203.0.113.32", ip, 17, []string{"tornode"}},
		"ipv6, added field ignored":  {ioc.IP, "2001:db8::30", ip, 87, []string{"bot"}},
		"mapped ipv4, decimal score": {ioc.IP, "198.51.100.34", ip, 50, []string{"compromised"}},
		"domain":                     {ioc.Domain, "c2.example.com", dom, 94, []string{"cnc", "mobile_cnc"}},
		"domain lower-cased":         {ioc.Domain, "parked.example.net", dom, 20, []string{"parking"}},
		"domain with a trailing dot": {ioc.Domain, "exe-source.example.com", dom, 69, []string{"exe_source"}},
	})
	checkRejected(t, rec.Rejections, []string{
		`5: invalid indicator: not an IP address: "198.51.100.0/24"`,
		`6: "203.0.113.33" has no scored category`,
		`7: invalid indicator: not an IP address: "not-an-ip"`,
		`3: skipped: the wildcard "*.dyn.example.org" is not a kind tifeeds keeps`,
		`4: skipped: the wildcard "*" is not a kind tifeeds keeps`,
		`5: invalid indicator`,
	})
	if !slices.Equal(rec.Lists, []string{ip, dom}) {
		t.Errorf("lists complete %q, want both", rec.Lists)
	}
	for _, r := range srv.Requests() {
		if !strings.HasPrefix(r.URL.Path, "/"+testCode+"/reputation/") || r.Host != "rules.emergingthreatspro.com" {
			t.Errorf("request %s%s", r.Host, r.URL.Path)
		}
	}
	if !strings.Contains(cursor, `"et-reputation-ip":{"etag":"\"`) || !strings.Contains(cursor, "Sun, 01 Nov 2026 06:00:00 GMT") {
		t.Errorf("cursor %s lacks the validators", cursor)
	}
}

// An unchanged list is asked for conditionally and not read; a run where
// no list changed says so, and completes no list (nothing expires).
func TestFetchConditional(t *testing.T) {
	h := newVendor(t)
	src, srv := newSource(t, h)
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Feed: source.Feed{Key: testCode}}, &vendortest.Recorder{})
	if err != nil {
		t.Fatal(err)
	}

	var rec vendortest.Recorder
	again, err := src.fetch(context.Background(), source.Request{Cursor: cursor, Feed: source.Feed{Key: testCode}}, &rec)
	if !errors.Is(err, ioc.ErrUnchanged) || again != cursor || len(rec.Indicators)+len(rec.Lists) != 0 {
		t.Fatalf("unchanged: err %v, cursor %q, %d indicators, lists %q", err, again, len(rec.Indicators), rec.Lists)
	}
	reqs := srv.Requests()[2:]
	if len(reqs) != 2 || reqs[0].Header.Get("If-None-Match") == "" || reqs[0].Header.Get("If-Modified-Since") != "Sun, 01 Nov 2026 06:00:00 GMT" {
		t.Errorf("second run's requests are not conditional: %v", reqs[0].Header)
	}

	h.DomainRep = []byte(`{"new.example.com": {"CnC": "127"}}`)
	var rec2 vendortest.Recorder
	changed, err := src.fetch(context.Background(), source.Request{Cursor: cursor, Feed: source.Feed{Key: testCode}}, &rec2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec2.Lists, []string{"et-reputation-domain"}) || len(rec2.Indicators) != 1 || rec2.Indicators[0].Value != "new.example.com" {
		t.Errorf("one list changed: lists %q, indicators %v", rec2.Lists, rec2.Indicators)
	}
	if changed == cursor {
		t.Error("the cursor kept the old domain list's validator")
	}
}

func TestFetchKeyless(t *testing.T) {
	src, srv := newSource(t, newVendor(t))
	var rec vendortest.Recorder
	if _, err := src.fetch(context.Background(), source.Request{}, &rec); err != nil {
		t.Fatal(err)
	}
	const l = "et-compromised"
	c := []string{"compromised"}
	check(t, &rec, map[string]want{
		"ip":                {ioc.IP, "192.0.2.40", l, 70, c},
		"trailing comment":  {ioc.IP, "192.0.2.41", l, 70, c},
		"ipv6":              {ioc.IP, "2001:db8::41", l, 70, c},
		"after a bad entry": {ioc.IP, "203.0.113.42", l, 70, c},
	})
	checkRejected(t, rec.Rejections, []string{
		`6: skipped: the network "198.51.100.0/24" is not a kind tifeeds keeps`,
		`7: invalid indicator: not an IP address: "192.0.2.300"`,
	})
	if !slices.Equal(rec.Lists, []string{l}) {
		t.Errorf("lists complete %q", rec.Lists)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Host != "rules.emergingthreats.net" || reqs[0].URL.Path != "/blockrules/compromised-ips.txt" {
		t.Errorf("requests %v", reqs)
	}
}

func TestFetchFailures(t *testing.T) {
	cases := map[string]struct {
		key   string
		setup func(*vendortest.ETReputation)
		want  ioc.FailureKind
		lists []string
	}{
		"wrong code":          {key: "0000000000000000", want: ioc.InvalidCredentials},
		"domain list cut":     {key: testCode, setup: func(h *vendortest.ETReputation) { h.CutList = "domainrepdata.json" }, want: ioc.ConnectionError, lists: []string{"et-reputation-ip"}},
		"keyless list cut":    {setup: func(h *vendortest.ETReputation) { h.CutList = "compromised-ips.txt" }, want: ioc.ConnectionError},
		"persistent 503":      {key: testCode, setup: func(h *vendortest.ETReputation) { h.FailStatus = 503 }, want: ioc.FetchingDataError},
		"one 429 waited out":  {key: testCode, setup: func(h *vendortest.ETReputation) { h.FailStatus, h.FailTimes, h.RetryAfter = 429, 1, "2" }, lists: []string{"et-reputation-ip", "et-reputation-domain"}},
		"list missing":        {key: testCode, setup: func(h *vendortest.ETReputation) { h.IPRep = nil }, want: ioc.InvalidURL},
		"not the json format": {key: testCode, setup: func(h *vendortest.ETReputation) { h.IPRep = []byte(`["203.0.113.1"]`) }, want: ioc.FetchingDataError},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := newVendor(t)
			if c.setup != nil {
				c.setup(h)
			}
			src, _ := newSource(t, h)
			var rec vendortest.Recorder
			cursor, err := src.fetch(context.Background(), source.Request{Cursor: `{"x":{}}`, Feed: source.Feed{Key: c.key}}, &rec)
			if c.want == "" && err != nil || c.want != "" && ioc.FailureOf(err) != c.want {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if c.want != "" && cursor != `{"x":{}}` {
				t.Errorf("a failed run changed the cursor to %q", cursor)
			}
			if err != nil && strings.Contains(err.Error(), testCode) || c.key != "" && err != nil && strings.Contains(err.Error(), c.key) {
				t.Errorf("the code shows in %v", err)
			}
			if !slices.Equal(rec.Lists, c.lists) {
				t.Errorf("lists complete %q, want %q", rec.Lists, c.lists)
			}
		})
	}
}

// A transport failure quotes the URL; the code in its path is masked.
func TestFetchConnectionFailureHidesCode(t *testing.T) {
	srv := vendortest.New(t)
	base := srv.URL
	srv.Close()
	src := &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(base)}}
	_, err := src.fetch(context.Background(), source.Request{Cursor: "", Feed: source.Feed{Key: testCode}}, &vendortest.Recorder{})
	if ioc.FailureOf(err) != ioc.FailedToConnect || strings.Contains(err.Error(), testCode) || !strings.Contains(err.Error(), "/***/reputation/") {
		t.Errorf("err %v, want Failed to connect with the code masked", err)
	}
}
