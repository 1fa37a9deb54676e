package premium

import (
	"context"
	"errors"
	"fmt"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// loopback is a client allowed to fetch from the tests' loopback servers,
// which the egress policy refuses by default.
var loopback = egress.NewClient(egress.Options{AllowPrivate: true})

// recordingSink keeps what a source hands over.
type recordingSink struct {
	source.SinkBase
	indicators  []ioc.Indicator
	rejected    []string // "position: reason"
	checkpoints []string
	lists       []string // "name" (ListComplete) or "name since <RFC 3339>"
}

func (s *recordingSink) Indicator(_ context.Context, ind ioc.Indicator) error {
	s.indicators = append(s.indicators, ind)
	return nil
}

func (s *recordingSink) Rejected(pos int64, reason string) {
	s.rejected = append(s.rejected, fmt.Sprintf("%d: %s", pos, reason))
}

func (s *recordingSink) Checkpoint(_ context.Context, cursor string) error {
	s.checkpoints = append(s.checkpoints, cursor)
	return nil
}

func (s *recordingSink) ListComplete(source string, since time.Time) {
	if since.IsZero() {
		s.lists = append(s.lists, source)
		return
	}
	s.lists = append(s.lists, source+" since "+since.Format(time.RFC3339))
}

func (s *recordingSink) lines() []string {
	var got []string
	for _, ind := range s.indicators {
		got = append(got, fmt.Sprintf("%s %s %d %s %v", ind.Kind, ind.Value, ind.Score, ind.Source, ind.Tags))
	}
	return got
}

// socradar serves the vendortest SOCRadar simulator on loopback, with the
// key "k1secret".
func socradar(t *testing.T) (*vendortest.SOCRadar, *httptest.Server) {
	sim := &vendortest.SOCRadar{Key: "k1secret"}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, srv
}

// finance is the feed of the simulator's finance list, its key in the URL.
func finance(srv *httptest.Server) source.Feed {
	return source.Feed{URL: vendortest.SOCRadarEndpoint(srv.URL, "finance", "k1secret")}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestFeedListDocuments(t *testing.T) {
	for name, tc := range map[string]struct {
		file     string
		want     []string
		rejected []string // prefixes, in order
		lists    []string
	}{
		"array": {
			file: "feedlist_array.json",
			want: []string{
				"ip 203.0.113.7 80 finance [socradar]",
				"ip 2001:db8::7 90 finance [socradar]",
				"ip 198.51.100.9 90 finance [abuse tracker port:8443]",
				"domain bad.example.com 65 finance []",
				"domain phish.example.net 90 finance []",
				"url http://example.org/login?a=1 56 finance [socradar]",
				"md5 d41d8cd98f00b204e9800998ecf8427e 0 finance [socradar]",
				"sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709 90 finance [socradar]",
				"sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 90 finance [socradar]",
				"ip 203.0.113.11 90 finance [socradar]",
			},
			rejected: []string{
				"10: sha1: a hash of 6 characters",
				"11: ip: ",
				`12: skipped: feed_type "cidr" is not a kind tifeeds keeps`,
				"13: extra_info.score 150 is not between 0 and 100",
				"14: not a feed object",
				"15: not a feed object",
				"16: no feed_type",
				"17: no feed value",
			},
			lists: []string{"finance"},
		},
		"wrapped in data": {
			file:  "feedlist_wrapped.json",
			want:  []string{"domain ransom.example.com 95 finance [socradar]", "ip 192.0.2.44 75 finance [socradar]"},
			lists: []string{"finance"},
		},
		"empty list": {file: "feedlist_empty.json", lists: []string{"finance"}},
	} {
		t.Run(name, func(t *testing.T) {
			sim, srv := socradar(t)
			sim.Set("finance", vendortest.Testdata(t, tc.file))
			src := &FeedListSource{Settings: feedhttp.Settings{Client: loopback}}
			sink := &recordingSink{}
			cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Started: t0, Feed: finance(srv)}, sink)
			if err != nil || cursor != "" {
				t.Fatalf("fetch: cursor %q, %v", cursor, err)
			}
			if got := sink.lines(); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("indicators:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if len(sink.rejected) != len(tc.rejected) {
				t.Fatalf("rejected = %q", sink.rejected)
			}
			for i, w := range tc.rejected {
				if !strings.HasPrefix(sink.rejected[i], w) {
					t.Errorf("rejection %d = %q, want it to start with %q", i, sink.rejected[i], w)
				}
			}
			if fmt.Sprint(sink.lists) != fmt.Sprint(tc.lists) {
				t.Errorf("lists complete = %q, want %q", sink.lists, tc.lists)
			}
		})
	}
}

// TestFeedListWalk reads a document bigger than the per-poll limit over
// several polls: each goes on where the last stopped, and only the poll
// that reads the end names the list complete, since the walk's first poll,
// and only when the document did not change under the walk.
func TestFeedListWalk(t *testing.T) {
	doc := func(first, n int) []byte { return vendortest.SOCRadarDocument(vendortest.SOCRadarIPs(first, n), false) }
	t1, t2, t3 := t0.Add(time.Hour), t0.Add(2*time.Hour), t0.Add(3*time.Hour)
	for name, tc := range map[string]struct {
		second    []byte // the document the second and third polls read
		cursor    string // the cursor of the first poll; "" to run it
		want      int    // indicators handed by all polls
		wantLists []string
	}{
		"unchanged": {second: doc(0, 7), want: 7, wantLists: []string{"finance since " + t0.Format(time.RFC3339)}},
		// An item ahead of the resume point dropped: the rest shifted, so
		// one object is not read this walk, and the walk expires nothing.
		"changed ahead": {second: vendortest.SOCRadarDocument(append(vendortest.SOCRadarIPs(0, 1), vendortest.SOCRadarIPs(2, 5)...), false),
			want: 6},
		// Items appended after the resume point are read, and the walk is
		// complete: the objects before it are those it read.
		"grown after": {second: doc(0, 9), want: 9, wantLists: []string{"finance since " + t0.Format(time.RFC3339)}},
		// The document shrank under the resume point.
		"shrunk": {second: doc(0, 2), want: 3},
		// A cursor of the earlier format starts a new walk at once.
		"old cursor": {cursor: "object:4", second: doc(0, 7), want: 7,
			wantLists: []string{"finance since " + t1.Format(time.RFC3339)}},
	} {
		t.Run(name, func(t *testing.T) {
			sim, srv := socradar(t)
			sim.Set("finance", doc(0, 7))
			src := &FeedListSource{Settings: feedhttp.Settings{Client: loopback}}
			all := &recordingSink{}
			cursor := tc.cursor
			if cursor == "" {
				first := &recordingSink{}
				var err error
				cursor, err = src.fetch(context.Background(), source.Request{Cursor: "", Started: t0, Limit: 3, Feed: finance(srv)}, first)
				if !errors.Is(err, source.ErrLimitReached) || len(first.indicators) != 3 || len(first.checkpoints) != 1 ||
					first.checkpoints[0] != cursor || len(first.lists) != 0 {
					t.Fatalf("first poll: cursor %q, %v, %d indicators, checkpoints %q, lists %q", cursor, err,
						len(first.indicators), first.checkpoints, first.lists)
				}
				all.indicators = append(all.indicators, first.indicators...)
			}
			sim.Set("finance", tc.second)
			for i, started := range []time.Time{t1, t2, t3} {
				sink := &recordingSink{}
				next, err := src.fetch(context.Background(), source.Request{Cursor: cursor, Started: started, Limit: 3, Feed: finance(srv)}, sink)
				all.indicators = append(all.indicators, sink.indicators...)
				all.lists = append(all.lists, sink.lists...)
				if errors.Is(err, source.ErrLimitReached) {
					if next == cursor || next == "" {
						t.Fatalf("poll %d: cursor %q did not move", i+2, next)
					}
					cursor = next
					continue
				}
				if err != nil || next != "" {
					t.Fatalf("poll %d: cursor %q, %v", i+2, next, err)
				}
				break
			}
			seen := map[string]bool{}
			for _, ind := range all.indicators {
				seen[ind.Value] = true
			}
			if len(seen) != tc.want {
				t.Errorf("%d distinct indicators over the walk, want %d: %q", len(seen), tc.want, all.lines())
			}
			if fmt.Sprint(all.lists) != fmt.Sprint(tc.wantLists) {
				t.Errorf("lists complete = %q, want %q", all.lists, tc.wantLists)
			}
		})
	}
}

// A limit met on the last object ends the walk: nothing follows.
func TestFeedListLimitAtTheEnd(t *testing.T) {
	sim, srv := socradar(t)
	sim.Set("finance", vendortest.SOCRadarDocument(vendortest.SOCRadarIPs(0, 3), true))
	src := &FeedListSource{Settings: feedhttp.Settings{Client: loopback}}
	sink := &recordingSink{}
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Started: t0, Limit: 3, Feed: finance(srv)}, sink)
	if err != nil || cursor != "" || len(sink.indicators) != 3 || fmt.Sprint(sink.lists) != "[finance]" {
		t.Fatalf("cursor %q, %v, %d indicators, lists %q", cursor, err, len(sink.indicators), sink.lists)
	}
}

func TestFeedListFailures(t *testing.T) {
	good := vendortest.SOCRadarDocument(vendortest.SOCRadarIPs(0, 50), false)
	capped := int64(len(good) + 100)
	for name, tc := range map[string]struct {
		setup    func(s *vendortest.SOCRadar)
		endpoint func(base string) string
		maxBytes int64
		kind     ioc.FailureKind
		detail   string
		ok       bool // the run succeeds after all
	}{
		"wrong key": {endpoint: func(b string) string { return vendortest.SOCRadarEndpoint(b, "finance", "nope") },
			kind: ioc.InvalidCredentials, detail: "check the API key"},
		"forbidden":        {setup: func(s *vendortest.SOCRadar) { s.Fail(403, 0, "") }, kind: ioc.InvalidCredentials, detail: "403"},
		"unknown feed":     {endpoint: func(b string) string { return vendortest.SOCRadarEndpoint(b, "other", "k1secret") }, kind: ioc.InvalidURL},
		"rate limited":     {setup: func(s *vendortest.SOCRadar) { s.Fail(429, 0, "0") }, kind: ioc.SurpassedQueryLimit, detail: "4 times"},
		"throttled once":   {setup: func(s *vendortest.SOCRadar) { s.Fail(429, 1, "0") }, ok: true},
		"long retry-after": {setup: func(s *vendortest.SOCRadar) { s.Fail(503, 0, "86400") }, kind: ioc.FetchingDataError, detail: "503"},
		"server error":     {setup: func(s *vendortest.SOCRadar) { s.Fail(502, 0, "0") }, kind: ioc.FetchingDataError, detail: "502"},
		"cut mid-body":     {setup: func(s *vendortest.SOCRadar) { s.SetBody(true, 0, 0) }, kind: ioc.ConnectionError},
		"announced too big": {setup: func(s *vendortest.SOCRadar) { s.SetBody(false, capped+1, 0) }, maxBytes: capped,
			kind: ioc.FetchingDataError, detail: "over the cap of"},
		"grows too big": {setup: func(s *vendortest.SOCRadar) { s.SetBody(false, 0, 101) }, maxBytes: capped,
			kind: ioc.FetchingDataError, detail: "over the cap of"},
		"exactly the cap": {setup: func(s *vendortest.SOCRadar) { s.SetBody(false, 0, 100) }, maxBytes: capped, ok: true},
		"not JSON":        {setup: func(s *vendortest.SOCRadar) { s.Set("finance", []byte("<html>")) }, kind: ioc.FetchingDataError, detail: "not in the expected format"},
		"ends early": {setup: func(s *vendortest.SOCRadar) { s.Set("finance", good[:len(good)/2]) },
			kind: ioc.FetchingDataError, detail: "not in the expected format"},
		"no data": {setup: func(s *vendortest.SOCRadar) {
			s.Set("finance", []byte(`{"is_success": false, "message": "Feed list is being prepared"}`))
		}, kind: ioc.FetchingDataError, detail: `the platform says "Feed list is being prepared"`},
		"data not an array": {setup: func(s *vendortest.SOCRadar) { s.Set("finance", []byte(`{"data": {"a": 1}}`)) },
			kind: ioc.FetchingDataError, detail: `"data" is not an array`},
		"a scalar": {setup: func(s *vendortest.SOCRadar) { s.Set("finance", []byte(`"x"`)) },
			kind: ioc.FetchingDataError, detail: "neither an array nor an object"},
		"data after the document": {setup: func(s *vendortest.SOCRadar) { s.Set("finance", append(good[:len(good):len(good)], " x"...)) },
			kind: ioc.FetchingDataError, detail: "data after the end"},
		"bad endpoint": {endpoint: func(b string) string { return b + "/feed.json?key=k1secret" }, kind: ioc.InvalidURL, detail: "v=2"},
		"connection refused": {endpoint: func(string) string {
			return vendortest.SOCRadarEndpoint("http://127.0.0.1:1", "finance", "k1secret")
		}, kind: ioc.FailedToConnect},
	} {
		t.Run(name, func(t *testing.T) {
			sim, srv := socradar(t)
			sim.Set("finance", good)
			if tc.setup != nil {
				tc.setup(sim)
			}
			endpoint := vendortest.SOCRadarEndpoint(srv.URL, "finance", "k1secret")
			if tc.endpoint != nil {
				endpoint = tc.endpoint(srv.URL)
			}
			src := &FeedListSource{Settings: feedhttp.Settings{Client: loopback, RetryBackoff: time.Millisecond}, MaxBytes: tc.maxBytes}
			sink := &recordingSink{}
			_, err := src.fetch(context.Background(), source.Request{Cursor: "", Started: t0, Feed: source.Feed{URL: endpoint}}, sink)
			if tc.ok {
				if err != nil || len(sink.indicators) != 50 {
					t.Fatalf("err = %v, %d indicators", err, len(sink.indicators))
				}
				return
			}
			if ioc.FailureOf(err) != tc.kind || !strings.Contains(fmt.Sprint(err), tc.detail) {
				t.Fatalf("err = %v, want %s containing %q", err, tc.kind, tc.detail)
			}
			if strings.Contains(err.Error(), "k1secret") || strings.Contains(err.Error(), "nope") {
				t.Errorf("the error shows the API key: %v", err)
			}
			if len(sink.lists) != 0 {
				t.Errorf("a failed run named lists complete: %q", sink.lists)
			}
		})
	}
}

// Without a client of its own the source refuses loopback, and the error
// does not show the key.
func TestFeedListSourceDefaultClient(t *testing.T) {
	_, srv := socradar(t)
	_, err := (&FeedListSource{}).
		fetch(context.Background(), source.Request{Cursor: "", Started: t0, Feed: finance(srv)}, &recordingSink{})
	if ioc.FailureOf(err) != ioc.InvalidURL || !strings.Contains(fmt.Sprint(err), egress.Setting) {
		t.Fatalf("err = %v, want Invalid URL naming %s", err, egress.Setting)
	}
	if strings.Contains(err.Error(), "k1secret") {
		t.Errorf("the error shows the API key: %v", err)
	}
}

// A server that sends nothing in time is a Connection Error naming the
// timeout.
func TestFeedListTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("["))
		w.(http.Flusher).Flush()
		<-release
	}))
	defer srv.Close()
	defer close(release)
	src := &FeedListSource{Settings: feedhttp.Settings{Client: loopback}, Timeout: 200 * time.Millisecond}
	_, err := src.fetch(context.Background(), source.Request{Cursor: "", Started: t0, Feed: finance(srv)}, &recordingSink{})
	if ioc.FailureOf(err) != ioc.ConnectionError || !strings.Contains(fmt.Sprint(err), "did not arrive within") {
		t.Fatalf("err = %v", err)
	}
}

func TestClip(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"short":             {"abc", "abc"},
		"exactly 200":       {strings.Repeat("a", 200), strings.Repeat("a", 200)},
		"cut inside a rune": {strings.Repeat("a", 199) + "é", strings.Repeat("a", 199) + "…"},
		"cut after a rune":  {strings.Repeat("a", 198) + "é" + "b", strings.Repeat("a", 198) + "é" + "…"},
		"four-byte runes":   {strings.Repeat("😀", 60), strings.Repeat("😀", 50) + "…"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := clip(tc.in); got != tc.want || !utf8.ValidString(got) {
				t.Errorf("clip = %q, want %q", got, tc.want)
			}
		})
	}
}
