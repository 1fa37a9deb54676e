package otx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ioc"
)

const testKey = "otx-test-key-0123456789abcdef"

func loadPulses(t *testing.T) [][]byte {
	t.Helper()
	b, err := os.ReadFile("testdata/pulses.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(raw))
	for i, p := range raw {
		out[i] = p
	}
	return out
}

var since = time.Date(2026, 10, 15, 0, 0, 0, 0, time.UTC)

func newSource(t *testing.T, h *vendortest.OTX) (*Source, *vendortest.Server) {
	t.Helper()
	srv := vendortest.New(t)
	srv.Handle("otx.alienvault.com", h)
	return &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), Sleep: func(context.Context, time.Duration) error { return nil }}}, srv
}

func TestFetchMapping(t *testing.T) {
	src, _ := newSource(t, &vendortest.OTX{Key: testKey, Pulses: loadPulses(t)})
	var rec vendortest.Recorder
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: source.Feed{Key: testKey}}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if cursor != "2026-11-03T12:30:00.500000" {
		t.Errorf("cursor %q, want the newest modified", cursor)
	}
	pulse1 := []string{"phishing", "cisa", "whirlpool", "t1059", "t1566.001", "tlp:white"}
	withPort := func(p string) []string { return append(slices.Clone(pulse1), "port:"+p) }
	cases := map[string]struct {
		kind       ioc.Kind
		value      string
		score      int
		tags       []string
		validUntil time.Time
		revoked    bool
	}{
		"ipv4 with expiration":      {ioc.IP, "203.0.113.10", 70, pulse1, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), false},
		"ipv4 with a port":          {ioc.IP, "203.0.113.11", 70, withPort("8443"), time.Time{}, false},
		"bare ipv6 is not split":    {ioc.IP, "2001:db8::5", 70, pulse1, time.Time{}, false},
		"bracketed ipv6 with port":  {ioc.IP, "2001:db8::6", 70, withPort("443"), time.Time{}, false},
		"domain normalised":         {ioc.Domain, "bad.example.com", 70, pulse1, time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC), false},
		"hostname is a domain":      {ioc.Domain, "c2.example.net", 70, pulse1, time.Time{}, false},
		"url":                       {ioc.URL, "http://malware.example.com/payload.bin", 70, pulse1, time.Time{}, false},
		"uri holding a full url":    {ioc.URL, "https://login.example.org/verify?id=1", 70, pulse1, time.Time{}, false},
		"md5 lower-cased":           {ioc.MD5, "d41d8cd98f00b204e9800998ecf8427e", 70, pulse1, time.Time{}, false},
		"sha256 under an md5 label": {ioc.SHA256, "8849a3273e0362c45b4928375d196714224ec22cb1d2df5d029bf57349860347", 70, pulse1, time.Time{}, false},
		"inactive is revoked":       {ioc.Domain, "withdrawn.example.com", 70, pulse1, time.Time{}, true},
		"no family scores 60":       {ioc.IP, "198.51.100.7", 60, []string{"botnet", "tlp:green"}, time.Time{}, false},
		"adversary scores 70":       {ioc.SHA1, "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3", 70, []string{"tlp:amber"}, time.Time{}, false},
		"sha256 upper-case":         {ioc.SHA256, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", 70, []string{"tlp:amber"}, time.Time{}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := rec.Find(c.kind, c.value)
			if !ok {
				t.Fatalf("no %s %s among %v", c.kind, c.value, rec.Indicators)
			}
			if got.Score != c.score || !slices.Equal(got.Tags, c.tags) || !got.ValidUntil.Equal(c.validUntil) || got.Revoked != c.revoked || got.Source != "otx" {
				t.Errorf("got score %d tags %v until %v revoked %v source %q; want %d %v %v %v otx",
					got.Score, got.Tags, got.ValidUntil, got.Revoked, got.Source, c.score, c.tags, c.validUntil, c.revoked)
			}
		})
	}
	if len(rec.Indicators) != len(cases) {
		t.Errorf("%d indicators, want %d: %v", len(rec.Indicators), len(cases), rec.Indicators)
	}
	if _, ok := rec.Find(ioc.IP, "192.0.2.99"); ok {
		t.Error("a pulse older than the backfill bound was read")
	}
	wantRejected := []string{
		"skipped: URI \"/gate.php\" is not a full URL",
		"FileHash-SHA1: invalid indicator: sha1 must be 40 hex digits, got 39 characters",
		"skipped: FileHash-IMPHASH is not a kind tifeeds keeps",
		"skipped: YARA is not a kind tifeeds keeps",
		"skipped: CIDR is not a kind tifeeds keeps",
		"skipped: CVE is not a kind tifeeds keeps",
		"skipped: Mutex is not a kind tifeeds keeps",
	}
	if len(rec.Rejections) != len(wantRejected) {
		t.Fatalf("rejected %q, want %q", rec.Rejections, wantRejected)
	}
	for i, w := range wantRejected {
		if !strings.HasSuffix(rec.Rejections[i], " "+w) {
			t.Errorf("rejected[%d] = %q, want ... %q", i, rec.Rejections[i], w)
		}
	}
}

func TestFetchRequests(t *testing.T) {
	src, srv := newSource(t, &vendortest.OTX{Key: testKey, Pulses: loadPulses(t)})
	if _, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: source.Feed{Key: testKey}}, &vendortest.Recorder{}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	q := r.URL.Query()
	if r.URL.Path != "/api/v1/pulses/subscribed" || q.Get("limit") != "50" || q.Get("modified_since") != "2026-10-15T00:00:00.000000" || r.Header.Get("X-OTX-API-KEY") != testKey {
		t.Errorf("request %s %v with key %q", r.URL.Path, q, r.Header.Get("X-OTX-API-KEY"))
	}
}

// Pages come newest first: a checkpoint in the middle of a walk must resume
// the walk, not skip the older pages.
func TestFetchPagesResumeAndCursor(t *testing.T) {
	h := &vendortest.OTX{Key: testKey, Pulses: loadPulses(t), PageSize: 1, CutPage: 2}
	src, srv := newSource(t, h)
	var rec vendortest.Recorder
	_, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: source.Feed{Key: testKey}}, &rec)
	if ioc.FailureOf(err) != ioc.ConnectionError {
		t.Fatalf("cut page 2: %v, want Connection Error", err)
	}
	if len(rec.Checkpoints) != 1 || !strings.HasPrefix(rec.Checkpoints[0], "{") {
		t.Fatalf("checkpoints %q, want one mid-walk cursor", rec.Checkpoints)
	}
	if len(rec.Indicators) != 2 { // the newest pulse, two hashes
		t.Fatalf("%d indicators before the cut, want 2", len(rec.Indicators))
	}

	h.CutPage = 0
	rec2 := vendortest.Recorder{}
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: rec.Checkpoints[0], Since: since, Feed: source.Feed{Key: testKey}}, &rec2)
	if err != nil {
		t.Fatal(err)
	}
	if cursor != "2026-11-03T12:30:00.500000" {
		t.Errorf("cursor %q after the resumed walk, want the newest modified of the whole walk", cursor)
	}
	if _, ok := rec2.Find(ioc.SHA1, "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"); ok {
		t.Error("the resumed walk read page 1 again")
	}
	if _, ok := rec2.Find(ioc.IP, "198.51.100.7"); !ok {
		t.Error("the resumed walk missed the oldest pulse")
	}
	last := srv.Requests()[len(srv.Requests())-1]
	if last.URL.Query().Get("page") != "3" || last.Header.Get("X-OTX-API-KEY") != testKey {
		t.Errorf("last request %v, want page 3 with the key", last.URL)
	}
	if got := rec2.Checkpoints[len(rec2.Checkpoints)-1]; got != cursor {
		t.Errorf("last checkpoint %q, want the final cursor %q", got, cursor)
	}

	// Unchanged: the server lists the newest pulse again (modified_since is
	// inclusive) but nothing is handed over.
	rec3 := vendortest.Recorder{}
	again, err := src.fetch(context.Background(), source.Request{Cursor: cursor, Since: since, Feed: source.Feed{Key: testKey}}, &rec3)
	if err != nil || again != cursor || len(rec3.Indicators) != 0 {
		t.Errorf("unchanged run: cursor %q, %d indicators, err %v; want %q, 0, nil", again, len(rec3.Indicators), err, cursor)
	}

	// A newer pulse: only it is read.
	h.Pulses = append(h.Pulses, []byte(`{"id": "new", "modified": "2026-11-04T00:00:00.000001", "tlp": "white", "tags": ["New"],
		"indicators": [{"indicator": "192.0.2.44", "type": "IPv4", "is_active": 1}]}`))
	rec4 := vendortest.Recorder{}
	newer, err := src.fetch(context.Background(), source.Request{Cursor: cursor, Since: since, Feed: source.Feed{Key: testKey}}, &rec4)
	if err != nil || newer != "2026-11-04T00:00:00.000001" || len(rec4.Indicators) != 1 || rec4.Indicators[0].Value != "192.0.2.44" {
		t.Errorf("newer run: cursor %q, indicators %v, err %v", newer, rec4.Indicators, err)
	}
}

func TestFetchNoKey(t *testing.T) {
	src, srv := newSource(t, &vendortest.OTX{Key: testKey})
	_, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since}, &vendortest.Recorder{})
	if ioc.FailureOf(err) != ioc.InvalidCredentials || !strings.Contains(err.Error(), "--otx-api-key (TIFEEDS_OTX_API_KEY)") {
		t.Errorf("err %v, want Invalid Credentials naming the setting", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests without a key", n)
	}
}

func TestFetchFailures(t *testing.T) {
	cases := map[string]struct {
		h        *vendortest.OTX
		key      string
		want     ioc.FailureKind // "" for success
		requests int
		slept    []time.Duration
	}{
		"wrong key":                  {h: &vendortest.OTX{}, key: "wrong", want: ioc.InvalidCredentials, requests: 1},
		"one 429 is waited out":      {h: &vendortest.OTX{FailStatus: 429, FailTimes: 1, RetryAfter: "7"}, want: "", requests: 2, slept: []time.Duration{7 * time.Second}},
		"one 504 is waited out":      {h: &vendortest.OTX{FailStatus: 504, FailTimes: 1}, want: "", requests: 2, slept: []time.Duration{5 * time.Second}},
		"persistent 429":             {h: &vendortest.OTX{FailStatus: 429, RetryAfter: "1"}, want: ioc.SurpassedQueryLimit, requests: 4, slept: []time.Duration{time.Second, time.Second, time.Second}},
		"persistent 503":             {h: &vendortest.OTX{FailStatus: 503, RetryAfter: "2"}, want: ioc.FetchingDataError, requests: 4, slept: []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second}},
		"retry-after beyond the cap": {h: &vendortest.OTX{FailStatus: 429, RetryAfter: "3600"}, want: ioc.SurpassedQueryLimit, requests: 1},
		"body cut mid-way":           {h: &vendortest.OTX{CutPage: 1}, want: ioc.ConnectionError, requests: 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := c.h
			h.Key, h.Pulses = testKey, loadPulses(t)
			src, srv := newSource(t, h)
			key := testKey
			if c.key != "" {
				key = c.key
			}
			var slept []time.Duration
			src.Sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
			var rec vendortest.Recorder
			cursor, err := src.fetch(context.Background(), source.Request{Cursor: "2026-10-20T00:00:00.000000", Since: since, Feed: source.Feed{Key: key}}, &rec)
			if c.want == "" && err != nil || c.want != "" && ioc.FailureOf(err) != c.want {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if c.want != "" && cursor != "2026-10-20T00:00:00.000000" {
				t.Errorf("a failed run moved the cursor to %q", cursor)
			}
			if err != nil && (strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), c.key) && c.key != "") {
				t.Errorf("the key shows in %v", err)
			}
			if n := len(srv.Requests()); n != c.requests {
				t.Errorf("%d requests, want %d", n, c.requests)
			}
			if !slices.Equal(slept, c.slept) {
				t.Errorf("waited %v, want %v", slept, c.slept)
			}
		})
	}
}

// The key goes with every request: a next link off OTX's host is refused,
// never followed.
func TestFetchNextOffHost(t *testing.T) {
	srv := vendortest.New(t)
	srv.Handle("otx.alienvault.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"results": [], "count": 0, "next": "https://collector.example.com/api/v1/pulses/subscribed?page=2"}`)
	}))
	var other int
	srv.Handle("collector.example.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other++ }))
	src := &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL)}}
	_, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: source.Feed{Key: testKey}}, &vendortest.Recorder{})
	if ioc.FailureOf(err) != ioc.FetchingDataError || other != 0 {
		t.Errorf("err %v, %d requests off host; want Fetching Data Error and none", err, other)
	}
}

func TestFetchSinkError(t *testing.T) {
	src, _ := newSource(t, &vendortest.OTX{Key: testKey, Pulses: loadPulses(t)})
	boom := errors.New("store down")
	_, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: source.Feed{Key: testKey}}, &vendortest.Recorder{Fail: boom})
	if !errors.Is(err, boom) {
		t.Errorf("err %v, want the sink's error", err)
	}
}
