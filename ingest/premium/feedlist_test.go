package premium

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ioc"
)

// loopback is a client allowed to fetch from the tests' loopback servers,
// which the egress policy refuses by default.
var loopback = egress.NewClient(egress.Options{AllowPrivate: true})

// recordingSink keeps what a source hands over.
type recordingSink struct {
	indicators  []ioc.Indicator
	rejected    []string // "position: reason"
	checkpoints []string
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

// feedListServer serves body at /v2/<id>.json for the key "k1".
func feedListServer(t *testing.T, status int, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("key") != "k1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/v2/finance.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const feedDoc = `{"feed": {"name": "finance", "items": [1, 2]},
 "indicators": [
  {"type": "ip", "value": "192.0.2.7", "score": 80, "source": "botnet_c2", "tags": ["c2", " "]},
  {"type": "DOMAIN", "value": "Bad.Example.COM."},
  {"type": "sha256-hash", "value": "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855", "valid_until": "2030-01-02T03:04:05Z"},
  {"type": "ip", "value": "300.1.1.1"},
  {"type": "mutex", "value": "x"},
  {"type": "url", "value": "HTTP://Example.org/a", "score": 101},
  {"type": "ip", "value": 7},
  {"type": "url", "value": "https://example.net/x", "valid_until": "tomorrow"},
  {"type": "md5", "value": "d41d8cd98f00b204e9800998ecf8427e", "score": 0}
 ],
 "generated": "2026-11-21"}`

func TestFeedListSource(t *testing.T) {
	srv := feedListServer(t, 200, feedDoc)
	src := &FeedListSource{Client: loopback, Endpoint: srv.URL + "/v2/finance.json?key=k1&v=2"}
	sink := &recordingSink{}
	cursor, err := src.Fetch(context.Background(), "", 0, sink)
	if err != nil || cursor != "" {
		t.Fatalf("fetch: cursor %q, %v", cursor, err)
	}
	var got []string
	for _, ind := range sink.indicators {
		got = append(got, fmt.Sprintf("%s %s %d %s %v", ind.Kind, ind.Value, ind.Score, ind.Source, ind.Tags))
	}
	want := []string{
		"ip 192.0.2.7 80 botnet_c2 [c2]",
		"domain bad.example.com 90 finance []",
		"sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 90 finance []",
		"md5 d41d8cd98f00b204e9800998ecf8427e 0 finance []",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("indicators:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if u := sink.indicators[2].ValidUntil; u.Format("2006-01-02T15:04:05Z07:00") != "2030-01-02T03:04:05Z" {
		t.Errorf("valid_until = %v", u)
	}
	wantRejected := []string{"4: ", "5: unknown type", "6: score 101", "7: not an indicator object", "8: valid_until"}
	if len(sink.rejected) != len(wantRejected) {
		t.Fatalf("rejected = %q", sink.rejected)
	}
	for i, w := range wantRejected {
		if !strings.HasPrefix(sink.rejected[i], w) {
			t.Errorf("rejection %d = %q, want it to start with %q", i, sink.rejected[i], w)
		}
	}
}

func TestFeedListSourceLimitAndResume(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := 1; i <= 7; i++ {
		if i > 1 {
			b.WriteString(",")
		}
		if i == 3 {
			b.WriteString(`{"type": "ip", "value": "bad"}`)
			continue
		}
		fmt.Fprintf(&b, `{"type": "ip", "value": "198.51.100.%d"}`, i)
	}
	b.WriteString("]")
	srv := feedListServer(t, 200, b.String())
	src := &FeedListSource{Client: loopback, Endpoint: srv.URL + "/v2/finance.json?key=k1&v=2"}

	first := &recordingSink{}
	cursor, err := src.Fetch(context.Background(), "", 3, first)
	if !errors.Is(err, ErrLimitReached) || cursor != "object:4" || len(first.indicators) != 3 ||
		len(first.checkpoints) != 1 || first.checkpoints[0] != "object:4" {
		t.Fatalf("first poll: cursor %q, %v, %d indicators, checkpoints %q", cursor, err, len(first.indicators), first.checkpoints)
	}
	second := &recordingSink{}
	cursor, err = src.Fetch(context.Background(), cursor, 3, second)
	if err != nil || cursor != "" || len(second.indicators) != 3 || second.indicators[0].Value != "198.51.100.5" ||
		len(second.rejected) != 0 {
		t.Fatalf("second poll: cursor %q, %v, %+v, rejected %q", cursor, err, second.indicators, second.rejected)
	}
}

func TestFeedListSourceFailures(t *testing.T) {
	big := "[" + strings.Repeat(`{"type": "ip", "value": "192.0.2.1"},`, 100) + `{"type": "ip", "value": "192.0.2.1"}]`
	for name, tc := range map[string]struct {
		status   int
		body     string
		endpoint func(base string) string
		maxBytes int64
		kind     ioc.FailureKind
		detail   string
	}{
		"wrong key":               {status: 200, body: "[]", endpoint: func(b string) string { return b + "/v2/finance.json?key=nope&v=2" }, kind: ioc.InvalidCredentials},
		"unknown feed":            {status: 200, body: "[]", endpoint: func(b string) string { return b + "/v2/other.json?key=k1&v=2" }, kind: ioc.InvalidURL},
		"rate limited":            {status: 429, body: "", kind: ioc.SurpassedQueryLimit},
		"server error":            {status: 502, body: "", kind: ioc.FetchingDataError},
		"not JSON":                {status: 200, body: "<html>", kind: ioc.FetchingDataError, detail: "not valid JSON"},
		"cut off":                 {status: 200, body: `{"indicators": [{"type": "ip", "value": "192.0.2.1"}, {"ty`, kind: ioc.FetchingDataError, detail: "not valid JSON"},
		"no indicators":           {status: 200, body: `{"feed": "x"}`, kind: ioc.FetchingDataError, detail: `no "indicators"`},
		"a scalar":                {status: 200, body: `"x"`, kind: ioc.FetchingDataError, detail: "neither an array nor an object"},
		"too large":               {status: 200, body: big, maxBytes: 1000, kind: ioc.FetchingDataError, detail: "must be under"},
		"data after the document": {status: 200, body: `[{"type": "ip", "value": "192.0.2.1"}] trailing`, kind: ioc.FetchingDataError, detail: "data after the end"},
		"exactly the cap":         {status: 200, body: big, maxBytes: int64(len(big)), kind: ioc.FetchingDataError, detail: "must be under"},
		"connection refused":      {endpoint: func(string) string { return "http://127.0.0.1:1/v2/finance.json?key=k1&v=2" }, kind: ioc.FailedToConnect},
	} {
		t.Run(name, func(t *testing.T) {
			srv := feedListServer(t, tc.status, tc.body)
			endpoint := srv.URL + "/v2/finance.json?key=k1&v=2"
			if tc.endpoint != nil {
				endpoint = tc.endpoint(srv.URL)
			}
			src := &FeedListSource{Client: loopback, Endpoint: endpoint, MaxBytes: tc.maxBytes}
			_, err := src.Fetch(context.Background(), "", 0, &recordingSink{})
			if ioc.FailureOf(err) != tc.kind || !strings.Contains(fmt.Sprint(err), tc.detail) {
				t.Fatalf("err = %v, want %s containing %q", err, tc.kind, tc.detail)
			}
			if strings.Contains(err.Error(), "k1") {
				t.Errorf("the error shows the API key: %v", err)
			}
		})
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

// TestFeedListSourceConnection: a document cut by a failed connection is a
// Connection Error (a document that ends early but cleanly is bad JSON);
// without a client of its own the source refuses loopback, and neither
// error shows the key.
func TestFeedListSourceConnection(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		fmt.Fprint(w, `{"indicators": [{"type": "ip", "value": "192.0.2.1"},`)
	}))
	defer srv.Close()
	endpoint := srv.URL + "/v2/finance.json?key=k1secret&v=2"
	for name, tc := range map[string]struct {
		client *http.Client
		kind   ioc.FailureKind
		detail string
	}{
		"cut mid-body":     {client: loopback, kind: ioc.ConnectionError, detail: "broke off"},
		"refused loopback": {kind: ioc.InvalidURL, detail: egress.Setting},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := (&FeedListSource{Client: tc.client, Endpoint: endpoint}).Fetch(context.Background(), "", 0, &recordingSink{})
			if ioc.FailureOf(err) != tc.kind || !strings.Contains(fmt.Sprint(err), tc.detail) {
				t.Fatalf("err = %v, want %s containing %q", err, tc.kind, tc.detail)
			}
			if strings.Contains(err.Error(), "k1secret") {
				t.Errorf("the error shows the API key: %v", err)
			}
		})
	}
}
