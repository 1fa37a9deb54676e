package threatstream

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ioc"
)

const (
	testUser = "analyst@example.com"
	testKey  = "ts-test-key-0123456789abcdef"
)

var since = time.Date(2026, 11, 13, 0, 0, 0, 0, time.UTC)

// feed holds the test credentials every run gets unless a case sets others.
var feed = source.Feed{Username: testUser, Password: testKey}

func loadObjects(t *testing.T) [][]byte {
	t.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal(vendortest.Testdata(t, "objects.json"), &raw); err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(raw))
	for i, o := range raw {
		out[i] = o
	}
	return out
}

func newSource(t *testing.T, h *vendortest.ThreatStream) (*Source, *vendortest.Server) {
	t.Helper()
	srv := vendortest.New(t)
	srv.Handle(Host, h)
	return &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), Sleep: func(context.Context, time.Duration) error { return nil }}}, srv
}

func handler(t *testing.T) *vendortest.ThreatStream {
	return &vendortest.ThreatStream{Username: testUser, Key: testKey, Objects: loadObjects(t), PageSize: 5}
}

func TestFetchMapping(t *testing.T) {
	src, srv := newSource(t, handler(t))
	var rec vendortest.Recorder
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: feed}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if cursor != "550095700" {
		t.Errorf("cursor %q, want the highest update_id", cursor)
	}
	// 12 objects in the backfill window, 5 a page: a checkpoint per page.
	if want := []string{"550095630", "550095680", "550095700"}; !slices.Equal(rec.Checkpoints, want) {
		t.Errorf("checkpoints %q, want %q", rec.Checkpoints, want)
	}
	cases := map[string]struct {
		kind       ioc.Kind
		value      string
		score      int
		tags       []string
		source     string
		validUntil time.Time
		revoked    bool
	}{
		"ip with expiry, None tag dropped":        {ioc.IP, "203.0.113.67", 100, []string{"c2_ip", "c2", "test"}, "Analyst", time.Date(2026, 12, 22, 16, 42, 25, 366e6, time.UTC), false},
		"confidence -1 takes threatscore":         {ioc.Domain, "bad.example.com", 82, []string{"apt_domain", "apt"}, "Emerging Threats", time.Date(2026, 12, 30, 0, 0, 0, 0, time.UTC), false},
		"both -1 take the severity":               {ioc.URL, "http://login.example.net/verify?id=7", 90, []string{"phish_url", "phish", "credential-harvest"}, "Analyst", time.Time{}, false},
		"md5 typed sha256 by its subtype":         {ioc.SHA256, "8849a3273e0362c45b4928375d196714224ec22cb1d2df5d029bf57349860347", 65, []string{"mal_md5", "malware"}, "Analyst", time.Time{}, false},
		"md5 without subtype: length tells":       {ioc.SHA1, "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3", 40, []string{"mal_md5", "malware"}, "Analyst", time.Time{}, false},
		"md5 with subtype MD5":                    {ioc.MD5, "d41d8cd98f00b204e9800998ecf8427e", 55, []string{"mal_md5", "malware"}, "Analyst", time.Time{}, false},
		"inactive withdraws":                      {ioc.IP, "198.51.100.23", 90, []string{"c2_ip", "c2"}, "Analyst", time.Date(2026, 11, 22, 16, 42, 25, 366e6, time.UTC), true},
		"false positive withdraws":                {ioc.Domain, "benign.example.org", 30, []string{"suspicious_domain", "suspicious"}, "Analyst", time.Time{}, true},
		"ipv6, no score at all takes the default": {ioc.IP, "2001:db8::7", 50, []string{"c2_ip", "c2"}, "Analyst", time.Time{}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ind, ok := rec.Find(c.kind, c.value)
			if !ok {
				t.Fatalf("no %s %s among %v", c.kind, c.value, rec.Indicators)
			}
			if ind.Score != c.score || !slices.Equal(ind.Tags, c.tags) || ind.Source != c.source ||
				!ind.ValidUntil.Equal(c.validUntil) || ind.Revoked != c.revoked {
				t.Errorf("got %+v, want score %d tags %q source %q valid until %v revoked %v",
					ind, c.score, c.tags, c.source, c.validUntil, c.revoked)
			}
		})
	}
	if len(rec.Indicators) != len(cases) {
		t.Errorf("%d indicators, want %d: %v", len(rec.Indicators), len(cases), rec.Indicators)
	}
	wantRejected := []string{
		"9: skipped: email is not a kind tifeeds keeps",
		"10: skipped: hash subtype SHA512 is not a kind tifeeds keeps",
	}
	if len(rec.Rejections) != 3 || !slices.Equal(rec.Rejections[:2], wantRejected) || !strings.HasPrefix(rec.Rejections[2], `11: invalid ip "999.0.113.1"`) {
		t.Errorf("rejections %q, want %q and an invalid ip", rec.Rejections, wantRejected)
	}

	// The first request: the API's own ordering, the backfill bound, the
	// key in the header only.
	req := srv.Requests()[0]
	q := req.URL.Query()
	if q.Get("order_by") != "update_id" || q.Get("limit") != "1000" || q.Get("modified_ts__gt") != "2026-11-13T00:00:00.000Z" || q.Has("update_id__gt") {
		t.Errorf("first request %s", req.URL)
	}
	if got := req.Header.Get("Authorization"); got != "apikey "+testUser+":"+testKey {
		t.Errorf("Authorization %q", got)
	}
	if strings.Contains(req.URL.String(), testKey) {
		t.Errorf("the key is in the URL %s", req.URL)
	}
}

func TestFetchResumesFromCursor(t *testing.T) {
	cases := map[string]struct {
		cursor     string
		want       []string
		wantCursor string
	}{
		"after a page":       {"550095640", []string{"198.51.100.23", "2001:db8::7"}, "550095700"},
		"nothing new":        {"550095700", nil, "550095700"},
		"the window ignored": {"50", []string{"192.0.2.1", "203.0.113.67", "198.51.100.23", "2001:db8::7"}, "550095700"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src, srv := newSource(t, handler(t))
			var rec vendortest.Recorder
			cursor, err := src.fetch(context.Background(), source.Request{Cursor: c.cursor, Since: since, Feed: feed}, &rec)
			if err != nil {
				t.Fatal(err)
			}
			if cursor != c.wantCursor {
				t.Errorf("cursor %q, want %q", cursor, c.wantCursor)
			}
			if got := rec.Values(ioc.IP); !slices.Equal(got, c.want) {
				t.Errorf("ips %q, want %q", got, c.want)
			}
			q := srv.Requests()[0].URL.Query()
			if q.Get("update_id__gt") != c.cursor || q.Has("modified_ts__gt") {
				t.Errorf("resumed with %s", srv.Requests()[0].URL)
			}
		})
	}
}

func TestFetchFollowsNext(t *testing.T) {
	for name, absolute := range map[string]bool{"relative": false, "absolute": true} {
		t.Run(name, func(t *testing.T) {
			h := handler(t)
			h.PageSize, h.AbsoluteNext = 2, absolute
			src, srv := newSource(t, h)
			var rec vendortest.Recorder
			if _, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: feed}, &rec); err != nil {
				t.Fatal(err)
			}
			if n := len(srv.Requests()); n != 6 {
				t.Errorf("%d requests, want 6 pages of 2", n)
			}
			if len(rec.Indicators)+len(rec.Rejections) != 12 {
				t.Errorf("%d objects read, want 12", len(rec.Indicators)+len(rec.Rejections))
			}
			for _, r := range srv.Requests() {
				if r.Header.Get("Authorization") == "" {
					t.Errorf("%s without the key", r.URL)
				}
			}
		})
	}
}

// foreignNext answers one page whose next link leaves the vendor's host.
type foreignNext struct{}

func (foreignNext) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Write([]byte(`{"objects": [], "meta": {"next": "https://collector.example.com/steal?x=1"}}`))
}

func TestFetchFailures(t *testing.T) {
	cases := map[string]struct {
		h           http.Handler
		user, key   string
		cursor      string
		kind        ioc.FailureKind
		wantCursor  string
		checkpoints []string
	}{
		"no key":                {h: handler(t), user: testUser, kind: ioc.InvalidCredentials},
		"wrong key":             {h: handler(t), user: testUser, key: "wrong-key-4242", kind: ioc.InvalidCredentials},
		"quota persists":        {h: func() http.Handler { h := handler(t); h.FailStatus, h.RetryAfter = 429, "1"; return h }(), kind: ioc.SurpassedQueryLimit},
		"server error persists": {h: func() http.Handler { h := handler(t); h.FailStatus = 503; return h }(), kind: ioc.FetchingDataError},
		"cut second page": {h: func() http.Handler { h := handler(t); h.CutPage = 2; return h }(), kind: ioc.ConnectionError,
			wantCursor: "550095630", checkpoints: []string{"550095630"}},
		"next leaves the host": {h: foreignNext{}, kind: ioc.FetchingDataError},
		"not JSON": {h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>maintenance</html>")) }),
			kind: ioc.FetchingDataError},
		"no objects": {h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"detail": "x"}`)) }),
			kind: ioc.FetchingDataError},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			srv := vendortest.New(t)
			srv.Handle(Host, c.h)
			src := &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), Sleep: func(context.Context, time.Duration) error { return nil }}}
			feed := source.Feed{Username: testUser, Password: testKey}
			if c.user != "" || c.key != "" {
				feed = source.Feed{Username: c.user, Password: c.key}
			}
			var rec vendortest.Recorder
			cursor, err := src.fetch(context.Background(), source.Request{Cursor: c.cursor, Since: since, Feed: feed}, &rec)
			if got := ioc.FailureOf(err); err == nil || got != c.kind {
				t.Fatalf("error %v (%s), want %s", err, got, c.kind)
			}
			if cursor != c.wantCursor || !slices.Equal(rec.Checkpoints, c.checkpoints) {
				t.Errorf("cursor %q checkpoints %q, want %q %q", cursor, rec.Checkpoints, c.wantCursor, c.checkpoints)
			}
			if strings.Contains(err.Error(), feed.Password) && feed.Password != "" {
				t.Errorf("the key shows in %v", err)
			}
			if name == "no key" && len(srv.Requests()) != 0 {
				t.Errorf("%d requests without credentials", len(srv.Requests()))
			}
		})
	}
}

func TestFetchWaitsOutOneThrottle(t *testing.T) {
	h := handler(t)
	h.FailStatus, h.FailTimes, h.RetryAfter = 429, 1, "7"
	src, _ := newSource(t, h)
	var waits []time.Duration
	src.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	var rec vendortest.Recorder
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: feed}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if cursor != "550095700" || !slices.Equal(waits, []time.Duration{7 * time.Second}) {
		t.Errorf("cursor %q waits %v", cursor, waits)
	}
}

func TestFetchSinkErrorStops(t *testing.T) {
	src, _ := newSource(t, handler(t))
	stop := errors.New("limit")
	rec := vendortest.Recorder{Fail: stop}
	_, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: feed}, &rec)
	if !errors.Is(err, stop) {
		t.Fatalf("error %v, want the sink's", err)
	}
	if len(rec.Checkpoints) != 0 {
		t.Errorf("checkpoints %q after a sink error", rec.Checkpoints)
	}
}
