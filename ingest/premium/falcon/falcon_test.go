package falcon

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ioc"
)

const (
	testID     = "falcon-client-id-0123"
	testSecret = "falcon-secret-4567-abcdef"
	lastMarker = "17951334003b39e8762fb9a9f64a16bbd30324f013"
)

var since = time.Date(2026, 11, 13, 0, 0, 0, 0, time.UTC)

// feed holds the test credentials every run gets unless a case sets others.
var feed = source.Feed{Username: testID, Password: testSecret}

func loadIndicators(t *testing.T) [][]byte {
	t.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal(vendortest.Testdata(t, "indicators.json"), &raw); err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(raw))
	for i, o := range raw {
		out[i] = o
	}
	return out
}

func handler(t *testing.T) *vendortest.Falcon {
	return &vendortest.Falcon{ClientID: testID, Secret: testSecret, Indicators: loadIndicators(t)}
}

func newSource(t *testing.T, h http.Handler) (*Source, *vendortest.Server) {
	t.Helper()
	srv := vendortest.New(t)
	srv.Handle(Host, h)
	return &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), Sleep: func(context.Context, time.Duration) error { return nil }}}, srv
}

// gets returns the GET requests served, as the vendor saw them.
func gets(srv *vendortest.Server) []*http.Request {
	var out []*http.Request
	for _, r := range srv.Requests() {
		if r.Method == http.MethodGet {
			out = append(out, r)
		}
	}
	return out
}

func TestFetchMapping(t *testing.T) {
	h := handler(t)
	src, srv := newSource(t, h)
	var rec vendortest.Recorder
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: feed}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if cursor != lastMarker {
		t.Errorf("cursor %q, want the last _marker whole", cursor)
	}
	cases := map[string]struct {
		kind    ioc.Kind
		value   string
		score   int
		tags    []string
		revoked bool
	}{
		"ip, None dropped":     {ioc.IP, "203.0.113.80", 80, []string{"cobalt strike", "fancybear", "criminal"}, false},
		"domain normalised":    {ioc.Domain, "c2.example.net", 60, []string{"targeted"}, false},
		"url":                  {ioc.URL, "http://dl.example.org/payload.exe", 40, []string{"emotet", "criminal"}, false},
		"md5 lower-cased":      {ioc.MD5, "e52faef955f651da029a4ee4fa227c0f", 80, []string{"stop", "criminal", "ransomware"}, false},
		"sha1 unverified":      {ioc.SHA1, "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3", 20, nil, false},
		"sha256 no confidence": {ioc.SHA256, "8849a3273e0362c45b4928375d196714224ec22cb1d2df5d029bf57349860347", 40, []string{"stop"}, false},
		"deleted withdraws":    {ioc.IP, "198.51.100.44", 80, []string{"criminal"}, true},
		"ipv6":                 {ioc.IP, "2001:db8::80", 60, nil, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ind, ok := rec.Find(c.kind, c.value)
			if !ok {
				t.Fatalf("no %s %s among %v", c.kind, c.value, rec.Indicators)
			}
			if ind.Score != c.score || !slices.Equal(ind.Tags, c.tags) || ind.Revoked != c.revoked || ind.Source != SourceName {
				t.Errorf("got %+v, want score %d tags %q revoked %v", ind, c.score, c.tags, c.revoked)
			}
		})
	}
	if len(rec.Indicators) != len(cases) {
		t.Errorf("%d indicators, want %d: %v", len(rec.Indicators), len(cases), rec.Indicators)
	}
	want := []string{"8: skipped: email_address is not a kind tifeeds keeps", "9: skipped: mutex_name is not a kind tifeeds keeps"}
	if len(rec.Rejections) != 3 || !slices.Equal(rec.Rejections[:2], want) || !strings.HasPrefix(rec.Rejections[2], `10: invalid ip_address "not-an-ip"`) {
		t.Errorf("rejections %q", rec.Rejections)
	}
	// A checkpoint per row, rejected ones included, each a whole marker.
	if len(rec.Checkpoints) != 11 || rec.Checkpoints[10] != lastMarker {
		t.Errorf("checkpoints %q", rec.Checkpoints)
	}
	if h.Issued() != 1 {
		t.Errorf("%d tokens, want 1", h.Issued())
	}
	reqs := srv.Requests()
	tok := reqs[0]
	if tok.Method != http.MethodPost || tok.URL.Path != "/oauth2/token" {
		t.Fatalf("first request %s %s, want the token", tok.Method, tok.URL)
	}
	g := gets(srv)[0]
	q := g.URL.Query()
	if q.Get("filter") != "_marker:>='1794528000'" || q.Get("sort") != "_marker.asc" || q.Get("limit") != "1000" {
		t.Errorf("first page %s", g.URL)
	}
	if g.Header.Get("Authorization") != "Bearer falcon-token-1" {
		t.Errorf("Authorization %q", g.Header.Get("Authorization"))
	}
}

func TestFetchPagesAndResumesWithWholeMarker(t *testing.T) {
	cases := map[string]struct {
		cursor string
		want   []string // values, in order
	}{
		// The cursor names the md5 row; the sha1 row was written in the
		// same second and must be read, the md5 row not again.
		"same second after the cursor": {"17951329803793c282a7da81b63a755831e3838cca",
			[]string{"a94a8fe5ccb19ba61c4c0873d391e987982fbbd3", "8849a3273e0362c45b4928375d196714224ec22cb1d2df5d029bf57349860347", "198.51.100.44", "2001:db8::80"}},
		"nothing new": {lastMarker, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := handler(t)
			h.PageSize = 2
			src, srv := newSource(t, h)
			src.PageSize = 2
			var rec vendortest.Recorder
			cursor, err := src.fetch(context.Background(), source.Request{Cursor: c.cursor, Since: since, Feed: feed}, &rec)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ind := range rec.Indicators {
				got = append(got, ind.Value)
			}
			if !slices.Equal(got, c.want) || cursor != lastMarker {
				t.Errorf("values %q cursor %q, want %q %q", got, cursor, c.want, lastMarker)
			}
			if f := gets(srv)[0].URL.Query().Get("filter"); f != "_marker:>='"+c.cursor+"'" {
				t.Errorf("first filter %q", f)
			}
		})
	}
}

// clock is a test clock shared by the source and the simulator; waiting
// moves it on.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// afterGet runs fn after each GET the handler served.
type afterGet struct {
	h  http.Handler
	fn func()
}

func (a afterGet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.h.ServeHTTP(w, r)
	if r.Method == http.MethodGet {
		a.fn()
	}
}

func TestFetchTokenRenewal(t *testing.T) {
	cases := map[string]struct {
		setup      func(h *vendortest.Falcon, c *clock) http.Handler
		wantTokens int
		wantGets   int
		kind       ioc.FailureKind // "": success
	}{
		"expires with time": {func(h *vendortest.Falcon, c *clock) http.Handler {
			return afterGet{h, func() { c.Add(20 * time.Minute) }}
		}, 3, 6, ""},
		"revoked early: 401, one new token, same page": {func(h *vendortest.Falcon, c *clock) http.Handler {
			n := 0
			return afterGet{h, func() {
				if n++; n == 2 {
					h.ExpireTokens()
				}
			}}
		}, 2, 7, ""},
		// A refusal right after a new token is not asked again.
		"refused with a new token": {func(h *vendortest.Falcon, c *clock) http.Handler {
			h.TokenTTL = -1 // every token is born expired
			return h
		}, 1, 1, ioc.InvalidCredentials},
		"refused again: once per request": {func(h *vendortest.Falcon, c *clock) http.Handler {
			return afterGet{h, func() { h.TokenTTL = -1; h.ExpireTokens() }}
		}, 2, 3, ioc.InvalidCredentials},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := handler(t)
			h.PageSize = 3
			clk := &clock{t: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
			h.Now = clk.Now
			src, srv := newSource(t, c.setup(h, clk))
			src.Now, src.PageSize = clk.Now, 3
			var rec vendortest.Recorder
			cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: feed}, &rec)
			if c.kind != "" {
				if ioc.FailureOf(err) != c.kind || err == nil {
					t.Fatalf("error %v, want %s", err, c.kind)
				}
			} else if err != nil || cursor != lastMarker || len(rec.Checkpoints) != 11 {
				t.Fatalf("error %v cursor %q, %d rows", err, cursor, len(rec.Checkpoints))
			}
			if h.Issued() != c.wantTokens || len(gets(srv)) != c.wantGets {
				t.Errorf("%d tokens %d GETs, want %d %d", h.Issued(), len(gets(srv)), c.wantTokens, c.wantGets)
			}
			seen := map[string]bool{}
			for _, ind := range rec.Indicators {
				if seen[ind.Value] {
					t.Errorf("%s handed over twice", ind.Value)
				}
				seen[ind.Value] = true
			}
		})
	}
}

func TestFetchRateLimit(t *testing.T) {
	h := handler(t)
	h.PageSize, h.RateBudget, h.RateWindow = 3, 2, 90*time.Second
	clk := &clock{t: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
	h.Now = clk.Now
	src, srv := newSource(t, h)
	var waits []time.Duration
	src.Now, src.PageSize = clk.Now, 3
	src.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); clk.Add(d); return nil }
	var rec vendortest.Recorder
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: feed}, &rec)
	if err != nil || cursor != lastMarker {
		t.Fatalf("error %v cursor %q", err, cursor)
	}
	// Remaining 0 after the second and fourth pages: waited until the
	// window reset, so no page was refused. (Six pages of three: the
	// inclusive filter gives back the last row of the page before.)
	if h.Throttled() != 0 || !slices.Equal(waits, []time.Duration{90 * time.Second, 90 * time.Second}) {
		t.Errorf("%d throttled, waits %v", h.Throttled(), waits)
	}
	if len(gets(srv)) != 6 || len(rec.Indicators)+len(rec.Rejections) != 11 {
		t.Errorf("%d GETs, %d rows", len(gets(srv)), len(rec.Indicators)+len(rec.Rejections))
	}
}

func TestFetchThrottleRepeatsThePage(t *testing.T) {
	h := handler(t)
	h.PageSize, h.FailStatus, h.FailTimes, h.RetryAfter = 3, 429, 1, "4"
	src, srv := newSource(t, afterGet{h, func() {}})
	src.PageSize = 3
	var waits []time.Duration
	src.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	var rec vendortest.Recorder
	if _, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: feed}, &rec); err != nil {
		t.Fatal(err)
	}
	g := gets(srv)
	if len(g) != 7 || g[0].URL.RawQuery != g[1].URL.RawQuery || !slices.Equal(waits, []time.Duration{4 * time.Second}) {
		t.Errorf("%d GETs, waits %v", len(g), waits)
	}
	if len(rec.Indicators)+len(rec.Rejections) != 11 {
		t.Errorf("%d rows, want 11 once each", len(rec.Indicators)+len(rec.Rejections))
	}
}

func TestFetchFailures(t *testing.T) {
	withFalcon := func(f func(h *vendortest.Falcon)) func(t *testing.T) http.Handler {
		return func(t *testing.T) http.Handler { h := handler(t); h.PageSize = 3; f(h); return h }
	}
	cases := map[string]struct {
		h           func(t *testing.T) http.Handler
		id, secret  string
		kind        ioc.FailureKind
		wantCursor  string
		checkpoints int
		noRequests  bool
	}{
		"no secret":          {h: withFalcon(func(*vendortest.Falcon) {}), id: testID, secret: "-", kind: ioc.InvalidCredentials, noRequests: true},
		"wrong secret":       {h: withFalcon(func(*vendortest.Falcon) {}), id: testID, secret: "old-secret-9999", kind: ioc.InvalidCredentials},
		"token quota":        {h: withFalcon(func(h *vendortest.Falcon) { h.TokenFailStatus = 429 }), kind: ioc.SurpassedQueryLimit},
		"token server error": {h: withFalcon(func(h *vendortest.Falcon) { h.TokenFailStatus = 500 }), kind: ioc.FetchingDataError},
		"quota persists":     {h: withFalcon(func(h *vendortest.Falcon) { h.FailStatus = 429 }), kind: ioc.SurpassedQueryLimit},
		"server error":       {h: withFalcon(func(h *vendortest.Falcon) { h.FailStatus = 502 }), kind: ioc.FetchingDataError},
		"cut second page":    {h: withFalcon(func(h *vendortest.Falcon) { h.CutPage = 2 }), kind: ioc.ConnectionError, wantCursor: "1795132920e26e138c31543098d075d9c2193ecbc9", checkpoints: 3},
		"not JSON": {h: func(t *testing.T) http.Handler {
			h := handler(t)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					h.ServeHTTP(w, r)
					return
				}
				w.Write([]byte("<html>busy</html>"))
			})
		}, kind: ioc.FetchingDataError},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src, srv := newSource(t, c.h(t))
			src.PageSize = 3
			feed := feed
			if c.secret != "" {
				feed = source.Feed{Username: c.id, Password: strings.TrimPrefix(c.secret, "-")}
			}
			var rec vendortest.Recorder
			cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: feed}, &rec)
			if err == nil || ioc.FailureOf(err) != c.kind {
				t.Fatalf("error %v, want %s", err, c.kind)
			}
			if cursor != c.wantCursor || len(rec.Checkpoints) != c.checkpoints {
				t.Errorf("cursor %q checkpoints %q", cursor, rec.Checkpoints)
			}
			if strings.Contains(err.Error(), "secret-") {
				t.Errorf("a secret shows in %v", err)
			}
			if c.noRequests && len(srv.Requests()) != 0 {
				t.Errorf("%d requests without credentials", len(srv.Requests()))
			}
		})
	}
}

// limitSink refuses indicators after n, as the runner's per-poll limit
// does (the n-th is stored, and its refusal is the limit's).
type limitSink struct {
	vendortest.Recorder
	n int
}

var errLimit = errors.New("limit reached")

func (s *limitSink) Indicator(ctx context.Context, ind ioc.Indicator) error {
	if len(s.Indicators) >= s.n {
		return errLimit
	}
	return s.Recorder.Indicator(ctx, ind)
}

func TestFetchStopsAtTheSinkLimit(t *testing.T) {
	src, _ := newSource(t, handler(t))
	sink := &limitSink{n: 3}
	_, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: feed}, sink)
	if !errors.Is(err, errLimit) {
		t.Fatalf("error %v", err)
	}
	// The last checkpoint is the last row stored: the next poll starts
	// right after it.
	if cps := sink.Checkpoints; len(cps) != 3 || cps[2] != "1795132920e26e138c31543098d075d9c2193ecbc9" {
		t.Errorf("checkpoints %q", cps)
	}
}

// TestFetchVendorPagesSmallerThanAsked: a vendor that gives fewer rows
// than the limit asked is read on, by its total, to the end.
func TestFetchVendorPagesSmallerThanAsked(t *testing.T) {
	h := handler(t)
	h.PageSize = 4
	src, _ := newSource(t, h)
	var rec vendortest.Recorder
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since, Feed: feed}, &rec)
	if err != nil || cursor != lastMarker || len(rec.Checkpoints) != 11 {
		t.Fatalf("error %v cursor %q, %d rows, want all 11", err, cursor, len(rec.Checkpoints))
	}
}
