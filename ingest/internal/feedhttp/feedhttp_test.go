package feedhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// vendor answers each request with the next of its answers, the last one
// for ever, and records the requests.
type vendor struct {
	mu       sync.Mutex
	answers  []answer
	requests []*http.Request
}

type answer struct {
	status     int
	retryAfter string
	header     http.Header
	body       string
}

func (v *vendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	a := v.answers[min(len(v.requests), len(v.answers)-1)]
	v.requests = append(v.requests, r)
	v.mu.Unlock()
	for k, vs := range a.header {
		w.Header()[k] = vs
	}
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.WriteHeader(cmpOr(a.status, http.StatusOK))
	io.WriteString(w, a.body)
}

func cmpOr(v, def int) int {
	if v != 0 {
		return v
	}
	return def
}

func serve(t *testing.T, answers ...answer) (*vendor, string) {
	t.Helper()
	v := &vendor{answers: answers}
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	return v, srv.URL
}

var now = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)

// recordingGetter is a Getter that records its waits instead of taking
// them.
func recordingGetter(slept *[]time.Duration) *Getter {
	return &Getter{Who: "test", Settings: Settings{
		Now: func() time.Time { return now },
		Sleep: func(_ context.Context, d time.Duration) error {
			*slept = append(*slept, d)
			return nil
		},
	}}
}

func TestGetRetries(t *testing.T) {
	s := func(d int) time.Duration { return time.Duration(d) * time.Second }
	for name, tc := range map[string]struct {
		answers  []answer
		setup    func(*Getter)
		want     ioc.FailureKind // "" for success
		detail   string
		requests int
		slept    []time.Duration
	}{
		"200 at once": {
			answers: []answer{{body: "ok"}}, requests: 1,
		},
		"one 429 waits its Retry-After in seconds": {
			answers:  []answer{{status: 429, retryAfter: "7"}, {}},
			requests: 2, slept: []time.Duration{s(7)},
		},
		"one 503 waits its Retry-After date": {
			answers:  []answer{{status: 503, retryAfter: now.Add(90 * time.Second).Format(http.TimeFormat)}, {}},
			requests: 2, slept: []time.Duration{s(90)},
		},
		"a Retry-After date past is no wait": {
			answers:  []answer{{status: 503, retryAfter: now.Add(-time.Hour).Format(http.TimeFormat)}, {}},
			requests: 2, slept: []time.Duration{0},
		},
		"without Retry-After the backoff grows": {
			answers:  []answer{{status: 502}, {status: 504}, {status: 500}, {}},
			requests: 4, slept: []time.Duration{s(5), s(10), s(15)},
		},
		"a negative or unreadable Retry-After is the backoff": {
			answers:  []answer{{status: 429, retryAfter: "-3"}, {status: 429, retryAfter: "soon"}, {}},
			requests: 3, slept: []time.Duration{s(5), s(10)},
		},
		"the Backoff knob": {
			answers: []answer{{status: 503}, {}},
			setup:   func(g *Getter) { g.RetryBackoff = time.Millisecond }, requests: 2, slept: []time.Duration{time.Millisecond},
		},
		"a persistent 429 fails after MaxRetries": {
			answers: []answer{{status: 429, retryAfter: "1"}},
			want:    ioc.SurpassedQueryLimit, detail: "test: the server answered 429 Too Many Requests (GET ", requests: 4,
			slept: []time.Duration{s(1), s(1), s(1)},
		},
		"the repeats are counted in the message": {
			answers: []answer{{status: 503, retryAfter: "1"}},
			setup:   func(g *Getter) { g.MaxRetries = 1 }, want: ioc.FetchingDataError, detail: ", 2 times)", requests: 2,
			slept: []time.Duration{s(1)},
		},
		"negative MaxRetries never repeats": {
			answers: []answer{{status: 503, retryAfter: "1"}},
			setup:   func(g *Getter) { g.MaxRetries = -1 }, want: ioc.FetchingDataError, requests: 1,
		},
		"a Retry-After over the cap fails at once": {
			answers: []answer{{status: 429, retryAfter: "3600"}},
			want:    ioc.SurpassedQueryLimit, requests: 1,
		},
		"the MaxRetryWait knob": {
			answers: []answer{{status: 429, retryAfter: "3600"}, {}},
			setup:   func(g *Getter) { g.MaxRetryWait = 2 * time.Hour }, requests: 2, slept: []time.Duration{s(3600)},
		},
		"a growing backoff over the cap stops": {
			answers: []answer{{status: 503}},
			setup:   func(g *Getter) { g.MaxRetryWait = 12 * time.Second }, want: ioc.FetchingDataError, requests: 3,
			slept: []time.Duration{s(5), s(10)},
		},
		"509 is a quota, not repeated": {
			answers: []answer{{status: 509, retryAfter: "1"}},
			want:    ioc.SurpassedQueryLimit, requests: 1,
		},
		"402 is a quota": {
			answers: []answer{{status: 402}},
			want:    ioc.SurpassedQueryLimit, requests: 1,
		},
		"401 names the setting to check": {
			answers: []answer{{status: 401}},
			setup:   func(g *Getter) { g.Credentials = "set --x-key" }, want: ioc.InvalidCredentials, detail: "; set --x-key)", requests: 1,
		},
		"404 is a wrong URL": {
			answers: []answer{{status: 404}}, want: ioc.InvalidURL, requests: 1,
		},
		"a 304 to an unconditional request is a failure": {
			answers: []answer{{status: 304}}, want: ioc.FetchingDataError, requests: 1,
		},
	} {
		t.Run(name, func(t *testing.T) {
			v, base := serve(t, tc.answers...)
			var slept []time.Duration
			g := recordingGetter(&slept)
			if tc.setup != nil {
				tc.setup(g)
			}
			resp, err := g.Get(context.Background(), base+"/list?key=secret", Validators{})
			if err == nil {
				Close(resp)
			}
			if tc.want == "" && err != nil || tc.want != "" && ioc.FailureOf(err) != tc.want {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if tc.want != "" && !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("err %q does not say %q", err, tc.detail)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("err %q quotes the query", err)
			}
			if len(v.requests) != tc.requests {
				t.Errorf("%d requests, want %d", len(v.requests), tc.requests)
			}
			if !slices.Equal(slept, tc.slept) {
				t.Errorf("waited %v, want %v", slept, tc.slept)
			}
		})
	}
}

func TestGetSendsHeadersAndValidators(t *testing.T) {
	lastMod := now.Format(http.TimeFormat)
	for name, tc := range map[string]struct {
		cond       Validators
		answer     answer
		status     int
		noneMatch  string
		modSince   string
		validators Validators
	}{
		"first download": {
			answer: answer{header: http.Header{"Etag": {`"v1"`}, "Last-Modified": {lastMod}}},
			status: 200, validators: Validators{ETag: `"v1"`, LastModified: lastMod},
		},
		"unchanged since the ETag": {
			cond: Validators{ETag: `"v1"`}, answer: answer{status: 304},
			status: 304, noneMatch: `"v1"`,
		},
		"unchanged since Last-Modified": {
			cond: Validators{LastModified: lastMod}, answer: answer{status: 304},
			status: 304, modSince: lastMod,
		},
		"changed": {
			cond: Validators{ETag: `"v1"`, LastModified: lastMod}, answer: answer{header: http.Header{"Etag": {`"v2"`}}},
			status: 200, noneMatch: `"v1"`, modSince: lastMod, validators: Validators{ETag: `"v2"`},
		},
	} {
		t.Run(name, func(t *testing.T) {
			v, base := serve(t, tc.answer)
			g := &Getter{Who: "test", Header: http.Header{"User-Agent": {"tifeeds"}, "Auth-Key": {"k"}}}
			resp, err := g.Get(context.Background(), base+"/list", tc.cond)
			if err != nil {
				t.Fatal(err)
			}
			defer Close(resp)
			r := v.requests[0]
			if resp.StatusCode != tc.status || r.Header.Get("If-None-Match") != tc.noneMatch || r.Header.Get("If-Modified-Since") != tc.modSince {
				t.Errorf("answer %d to If-None-Match %q If-Modified-Since %q; want %d, %q, %q", resp.StatusCode,
					r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since"), tc.status, tc.noneMatch, tc.modSince)
			}
			if r.Header.Get("User-Agent") != "tifeeds" || r.Header.Get("Auth-Key") != "k" {
				t.Errorf("headers %v, want Header's", r.Header)
			}
			if resp.StatusCode == 200 && ValidatorsOf(resp) != tc.validators {
				t.Errorf("validators %+v, want %+v", ValidatorsOf(resp), tc.validators)
			}
		})
	}
}

// A key in the URL path never shows, whatever the failure quotes.
func TestGetMasksTheSecret(t *testing.T) {
	const secret = "s3cr3t/key" // path-escaped in the URL as s3cr3t%2Fkey
	_, live := serve(t, answer{status: 403})
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	for name, tc := range map[string]struct {
		base string
		want ioc.FailureKind
	}{
		"refused":    {live, ioc.InvalidCredentials},
		"no service": {dead.URL, ioc.FailedToConnect},
	} {
		t.Run(name, func(t *testing.T) {
			g := &Getter{Settings: Settings{MaxRetries: -1}, Who: "test", Secret: secret}
			u := tc.base + "/data/" + strings.ReplaceAll(secret, "/", "%2F") + "/list.json"
			_, err := g.Get(context.Background(), u, Validators{})
			if ioc.FailureOf(err) != tc.want {
				t.Fatalf("err %v, want %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "/data/***/list.json") {
				t.Errorf("err %q, want the key masked in the URL", err)
			}
		})
	}
}

// The run ending stops a wait and says so, unclassified.
func TestGetStopsWaitingWhenTheRunEnds(t *testing.T) {
	_, base := serve(t, answer{status: 429, retryAfter: "60"})
	ctx, cancel := context.WithCancel(context.Background())
	g := &Getter{Settings: Settings{Sleep: func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}}, Who: "test"}
	_, err := g.Get(ctx, base+"/list", Validators{})
	var fe *ioc.FetchError
	if !errors.Is(err, context.Canceled) || errors.As(err, &fe) {
		t.Errorf("err %v, want the context's, unclassified", err)
	}
}

func TestRetryAfter(t *testing.T) {
	for name, tc := range map[string]struct {
		h    string
		want time.Duration
		ok   bool
	}{
		"seconds":      {"120", 2 * time.Minute, true},
		"zero":         {" 0 ", 0, true},
		"negative":     {"-1", 0, false},
		"a date ahead": {now.Add(time.Minute).Format(http.TimeFormat), time.Minute, true},
		"a date past":  {now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		"empty":        {"", 0, false},
		"garbage":      {"tomorrow", 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := RetryAfter(tc.h, now)
			if ok != tc.ok || ok && got != tc.want {
				t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tc.h, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestValidatorsCursor(t *testing.T) {
	for name, tc := range map[string]struct {
		v      Validators
		cursor string
	}{
		"none":           {Validators{}, ""},
		"etag":           {Validators{ETag: `"v1"`}, `{"etag":"\"v1\""}`},
		"both":           {Validators{ETag: `W/"v1"`, LastModified: "Mon, 02 Nov 2026 11:00:00 GMT"}, `{"etag":"W/\"v1\"","last_modified":"Mon, 02 Nov 2026 11:00:00 GMT"}`},
		"last-modified ": {Validators{LastModified: "Mon, 02 Nov 2026 11:00:00 GMT"}, `{"last_modified":"Mon, 02 Nov 2026 11:00:00 GMT"}`},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.v.String(); got != tc.cursor {
				t.Errorf("String() = %q, want %q", got, tc.cursor)
			}
			if got := ParseValidators(tc.cursor); got != tc.v {
				t.Errorf("ParseValidators(%q) = %+v, want %+v", tc.cursor, got, tc.v)
			}
		})
	}
	if got := ParseValidators("1762128000/not-json"); !got.IsZero() {
		t.Errorf("a cursor of another format gave %+v, want none", got)
	}
}

func TestOr(t *testing.T) {
	if Or(int64(0), 5) != 5 || Or(int64(-1), 5) != 5 || Or(int64(3), 5) != 3 || Or(time.Duration(0), time.Second) != time.Second {
		t.Error("Or does not give the default for zero and negative values only")
	}
}

// cutReader gives n bytes, then fails like a connection cut mid-way.
type cutReader struct{ n int }

var errCut = errors.New("connection reset by peer")

func (c *cutReader) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, errCut
	}
	n := min(len(p), c.n)
	for i := range n {
		p[i] = 'x'
	}
	c.n -= n
	return n, nil
}

func TestBody(t *testing.T) {
	for name, tc := range map[string]struct {
		r        io.Reader
		max      int64
		read     int
		err      error
		exceeded bool
		wireErr  error
	}{
		"under the cap":   {r: strings.NewReader("0123456789"), max: 11, read: 10},
		"at the cap":      {r: strings.NewReader("0123456789"), max: 10, read: 10},
		"over the cap":    {r: strings.NewReader("0123456789"), max: 9, read: 9, err: ErrOverCap, exceeded: true},
		"no cap":          {r: strings.NewReader("0123456789"), read: 10},
		"cut mid-way":     {r: &cutReader{n: 4}, max: 10, read: 4, err: errCut, wireErr: errCut},
		"cut at the cap":  {r: &cutReader{n: 4}, max: 4, read: 4, err: errCut, wireErr: errCut},
		"cut, then cap 1": {r: io.MultiReader(strings.NewReader("ab"), &cutReader{}), max: 1, read: 1, err: ErrOverCap, exceeded: true},
	} {
		t.Run(name, func(t *testing.T) {
			b := Cap(tc.r, tc.max)
			got, err := io.ReadAll(b)
			if len(got) != tc.read || !errors.Is(err, tc.err) && !(tc.err == nil && err == nil) {
				t.Errorf("read %d bytes, err %v; want %d, %v", len(got), err, tc.read, tc.err)
			}
			if b.Exceeded() != tc.exceeded || !errors.Is(b.Err(), tc.wireErr) && !(tc.wireErr == nil && b.Err() == nil) {
				t.Errorf("exceeded %v, wire error %v; want %v, %v", b.Exceeded(), b.Err(), tc.exceeded, tc.wireErr)
			}
		})
	}
}

type progress struct {
	source.SinkBase
	read, total int64
}

func (p *progress) Indicator(context.Context, ioc.Indicator) error { return nil }
func (p *progress) Rejected(int64, string)                         {}
func (p *progress) Checkpoint(context.Context, string) error       { return nil }
func (p *progress) Downloaded(read, total int64)                   { p.read, p.total = read, total }

func TestNewBodyReportsProgress(t *testing.T) {
	_, base := serve(t, answer{body: strings.Repeat("x", 100<<10), header: http.Header{"Content-Length": {"102400"}}})
	resp, err := (&Getter{Who: "test"}).Get(context.Background(), base, Validators{})
	if err != nil {
		t.Fatal(err)
	}
	defer Close(resp)
	var p progress
	if _, err := io.Copy(io.Discard, NewBody(&p, resp, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if p.read != 100<<10 || p.total != 100<<10 {
		t.Errorf("progress %d of %d, want %d of %d", p.read, p.total, 100<<10, 100<<10)
	}
}

func TestBodyFailure(t *testing.T) {
	sinkErr := errors.New("store down")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	over := Cap(strings.NewReader("0123456789"), 4)
	io.ReadAll(over)
	cut := Cap(&cutReader{n: 2}, 10)
	io.ReadAll(cut)
	fine := Cap(strings.NewReader("[1,"), 10)
	io.ReadAll(fine)
	for name, tc := range map[string]struct {
		ctx    context.Context
		body   *Body
		err    error
		kind   ioc.FailureKind // "" for an unclassified error
		is     error
		detail string
	}{
		"the run ended":        {ctx: canceled, body: fine, err: io.ErrUnexpectedEOF, is: context.Canceled, detail: "test: unable to read the list"},
		"the connection":       {body: cut, err: io.ErrUnexpectedEOF, kind: ioc.ConnectionError, is: errCut, detail: "reading the list"},
		"the cap":              {body: over, err: ErrOverCap, kind: ioc.FetchingDataError, detail: "the list is over its cap of 4 bytes"},
		"the sink":             {body: fine, err: fmt.Errorf("row 3: %w", &SinkError{Err: sinkErr}), is: sinkErr},
		"classified already":   {body: fine, err: ioc.Fail(ioc.InvalidURL, errors.New("x")), kind: ioc.InvalidURL},
		"data of another kind": {body: fine, err: io.ErrUnexpectedEOF, kind: ioc.FetchingDataError, detail: "the list is not in the expected format"},
	} {
		t.Run(name, func(t *testing.T) {
			g := &Getter{Who: "test"}
			err := g.BodyFailure(cmpCtx(tc.ctx), "the list", tc.body, tc.err)
			var fe *ioc.FetchError
			switch {
			case tc.kind == "" && errors.As(err, &fe):
				t.Errorf("err %v classified as %s, want it unclassified", err, fe.Kind)
			case tc.kind != "" && ioc.FailureOf(err) != tc.kind:
				t.Errorf("err %v, want %s", err, tc.kind)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err %v does not wrap %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("err %q does not say %q", err, tc.detail)
			}
		})
	}
}

func cmpCtx(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
