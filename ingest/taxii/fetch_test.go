package taxii

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/taxii/taxiitest"
	"github.com/tifeeds/tifeeds/ioc"
)

const (
	collID     = "91a7b528-80eb-42ed-a74d-c6fbd5a26116"
	lockedID   = "52892447-4d7e-4f70-b94d-d7f22742ff63"
	collTitle  = "High Value Indicators"
	collAlias  = "high-value"
	testUser   = "alice"
	testSecret = "s3cret"
)

// base is the date_added of object 0; object i is added i ms later.
var base = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

func addedAt(i int) string {
	return base.Add(time.Duration(i) * time.Millisecond).Format(taxiitest.TimeLayout)
}

// newServer starts a TAXII server whose main collection holds n indicators.
func newServer(t testing.TB, n int) *taxiitest.Server {
	t.Helper()
	s := taxiitest.NewServer(
		taxiitest.Collection{ID: collID, Title: collTitle, Alias: collAlias, CanRead: true},
		taxiitest.Collection{ID: lockedID, Title: "Locked", CanRead: false},
	)
	s.Username, s.Password = testUser, testSecret
	for i := range n {
		s.Add(collID, base.Add(time.Duration(i)*time.Millisecond), taxiitest.Indicator(i))
	}
	t.Cleanup(s.Close)
	return s
}

// sleepRecorder stands in for Client.Sleep: it records and never waits.
type sleepRecorder struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (r *sleepRecorder) sleep(_ context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sleeps = append(r.sleeps, d)
	return nil
}

func newClient(pageSize int, sleeps *sleepRecorder) *Client {
	return &Client{
		Username: testUser, Password: testSecret, PageSize: pageSize,
		Now:   func() time.Time { return testNow },
		Sleep: sleeps.sleep,
	}
}

// objectsRequest reports whether r is a GET of an objects endpoint.
func objectsRequest(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/objects/") }

func wantValues(t *testing.T, sink *recSink, from, to int) {
	t.Helper()
	got, err := sink.values()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != to-from {
		t.Fatalf("stored %d indicators, want %d", len(got), to-from)
	}
	for i := from; i < to; i++ {
		if !got["ip:"+taxiitest.IPv4(i)] {
			t.Fatalf("indicator %d (%s) missing", i, taxiitest.IPv4(i))
		}
	}
}

func TestFetchPaginated(t *testing.T) {
	const n, pageSize = 10_000, 100
	s := newServer(t, n)
	c := newClient(pageSize, &sleepRecorder{})
	sink := &recSink{}
	since := base.Add(-time.Hour).Format(cursorLayout)

	cursor, err := c.Fetch(context.Background(), s.CollectionURL(collID), since, sink)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	wantValues(t, sink, 0, n)
	if len(sink.pending) != 0 {
		t.Errorf("%d indicators handed over after the last checkpoint", len(sink.pending))
	}
	if want := addedAt(n - 1); cursor != want {
		t.Errorf("cursor = %q, want the last X-TAXII-Date-Added-Last %q", cursor, want)
	}
	if len(sink.cursors) != n/pageSize {
		t.Errorf("%d checkpoints, want one per page (%d)", len(sink.cursors), n/pageSize)
	}
	for i, cur := range sink.cursors {
		if want := addedAt((i+1)*pageSize - 1); cur != want {
			t.Fatalf("checkpoint %d = %q, want %q", i, cur, want)
		}
	}
	ind := sink.stored[0]
	if ind.Source != collTitle || ind.Score != DefaultScore || ind.Kind != ioc.IP {
		t.Errorf("first indicator = %+v, want source %q, score %d, kind ip", ind, collTitle, DefaultScore)
	}

	reqs := s.Requests()
	if len(reqs) != n/pageSize {
		t.Fatalf("%d objects requests, want %d", len(reqs), n/pageSize)
	}
	for i, r := range reqs {
		wantNext := ""
		if i > 0 {
			wantNext = strconv.Itoa(i * pageSize)
		}
		// The original added_after stays on every next request.
		if r.AddedAfter != since || r.Next != wantNext || r.Limit != "100" || r.Accept != MediaType {
			t.Fatalf("request %d = %+v, want added_after %q, next %q, limit 100, Accept %q", i, r, since, wantNext, MediaType)
		}
	}
}

func TestFetchIncremental(t *testing.T) {
	s := newServer(t, 250)
	c := newClient(100, &sleepRecorder{})
	ctx := context.Background()

	first := &recSink{}
	cursor, err := c.Fetch(ctx, s.CollectionURL(collID), "", first)
	if err != nil {
		t.Fatalf("first Fetch: %v", err)
	}
	wantValues(t, first, 0, 250)

	for i := 250; i < 255; i++ {
		s.Add(collID, base.Add(time.Duration(i)*time.Millisecond), taxiitest.Indicator(i))
	}
	second := &recSink{}
	cursor2, err := c.Fetch(ctx, s.CollectionURL(collID), cursor, second)
	if err != nil {
		t.Fatalf("second Fetch: %v", err)
	}
	wantValues(t, second, 250, 255)
	if cursor2 != addedAt(254) {
		t.Errorf("cursor = %q, want %q", cursor2, addedAt(254))
	}
	if r := s.Requests(); r[len(r)-1].AddedAfter != cursor {
		t.Errorf("second run asked added_after %q, want the cursor %q", r[len(r)-1].AddedAfter, cursor)
	}

	third := &recSink{}
	cursor3, err := c.Fetch(ctx, s.CollectionURL(collID), cursor2, third)
	if err != nil {
		t.Fatalf("third Fetch: %v", err)
	}
	if cursor3 != cursor2 || len(third.all()) != 0 || len(third.cursors) != 0 {
		t.Errorf("idle run: cursor %q (want %q), %d indicators, %d checkpoints", cursor3, cursor2, len(third.all()), len(third.cursors))
	}
}

func TestFetchPagesByAddedAfterWithoutNext(t *testing.T) {
	s := newServer(t, 550)
	s.NoNext = true
	sink := &recSink{}
	cursor, err := newClient(100, &sleepRecorder{}).Fetch(context.Background(), s.CollectionURL(collID), "", sink)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	wantValues(t, sink, 0, 550)
	if cursor != addedAt(549) {
		t.Errorf("cursor = %q, want %q", cursor, addedAt(549))
	}
	reqs := s.Requests()
	if len(reqs) != 6 || reqs[1].AddedAfter != addedAt(99) || reqs[5].AddedAfter != addedAt(499) {
		t.Errorf("requests = %+v, want 6 paging by added_after", reqs)
	}
}

// failOnce returns a hook that answers the nth objects request with fail,
// once; passthrough lets fail call the real handler.
func failOnce(s *taxiitest.Server, nth int, fail func(s *taxiitest.Server, w http.ResponseWriter, r *http.Request)) func(http.ResponseWriter, *http.Request) bool {
	var mu sync.Mutex
	count, inner := 0, false
	return func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		if inner || !objectsRequest(r) {
			mu.Unlock()
			return false
		}
		count++
		hit := count == nth
		inner = hit
		mu.Unlock()
		if !hit {
			return false
		}
		fail(s, w, r)
		mu.Lock()
		inner = false
		mu.Unlock()
		return true
	}
}

// realPage renders the page the server would send.
func realPage(s *taxiitest.Server, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.Config.Handler.ServeHTTP(rec, r)
	return rec
}

func TestFetchInterruptedRunResumes(t *testing.T) {
	tests := map[string]func(s *taxiitest.Server, w http.ResponseWriter, r *http.Request){
		"server error": func(_ *taxiitest.Server, w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "boom", http.StatusBadGateway)
		},
		"truncated JSON": func(s *taxiitest.Server, w http.ResponseWriter, r *http.Request) {
			rec := realPage(s, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			body := rec.Body.Bytes()
			_, _ = w.Write(body[:len(body)/2])
		},
		"connection dropped mid-page": func(s *taxiitest.Server, w http.ResponseWriter, r *http.Request) {
			rec := realPage(s, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			body := rec.Body.Bytes()
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		},
	}
	for name, fail := range tests {
		t.Run(name, func(t *testing.T) {
			const n, pageSize, failPage = 1000, 100, 4
			s := newServer(t, n)
			s.Hook = failOnce(s, failPage, fail)
			c := newClient(pageSize, &sleepRecorder{})
			sink := &recSink{}

			cursor, err := c.Fetch(context.Background(), s.CollectionURL(collID), "", sink)
			want := ioc.FetchingDataError
			if name == "connection dropped mid-page" {
				// A transport failure: classified as every feed's are.
				want = ioc.FailureOf(ioc.HTTPRequestFailure("taxii", io.ErrUnexpectedEOF))
			}
			if ioc.FailureOf(err) != want || err == nil {
				t.Fatalf("Fetch = %v, want %s", err, want)
			}
			sink.abort() // the runner rolls back what was not checkpointed
			if want := addedAt((failPage-1)*pageSize - 1); cursor != want {
				t.Fatalf("cursor after failure = %q, want the last checkpoint %q", cursor, want)
			}
			wantValues(t, sink, 0, (failPage-1)*pageSize)

			cursor, err = c.Fetch(context.Background(), s.CollectionURL(collID), cursor, sink)
			if err != nil {
				t.Fatalf("resumed Fetch: %v", err)
			}
			wantValues(t, sink, 0, n) // no loss, no duplicate
			if cursor != addedAt(n-1) {
				t.Errorf("final cursor = %q, want %q", cursor, addedAt(n-1))
			}
		})
	}
}

// loopHook answers every objects request with page(i) for the ith request.
func loopHook(page func(i int, w http.ResponseWriter)) func(http.ResponseWriter, *http.Request) bool {
	var mu sync.Mutex
	i := 0
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !objectsRequest(r) {
			return false
		}
		mu.Lock()
		i++
		n := i
		mu.Unlock()
		w.Header().Set("Content-Type", MediaType)
		page(n, w)
		return true
	}
}

func indicatorJSON(i int) string {
	return fmt.Sprintf(`{"type":"indicator","id":"indicator--%d","pattern_type":"stix","pattern":"[ipv4-addr:value = '%s']"}`, i, taxiitest.IPv4(i))
}

func TestFetchDetectsPagingLoop(t *testing.T) {
	tests := map[string]struct {
		page     func(i int, w http.ResponseWriter)
		requests int
	}{
		// A repeated next is no loop by itself (see TestFetchMedallion);
		// the same objects again under a header that does not move are.
		"same page, same next": {
			page: func(i int, w http.ResponseWriter) {
				w.Header().Set("X-TAXII-Date-Added-Last", addedAt(0))
				fmt.Fprintf(w, `{"more":true,"next":"again","objects":[%s]}`, indicatorJSON(0))
			},
			requests: 1 + maxStalledPages,
		},
		"pages cycle under fresh tokens": {
			page: func(i int, w http.ResponseWriter) {
				n := (i - 1) % 3
				w.Header().Set("X-TAXII-Date-Added-Last", addedAt(n))
				fmt.Fprintf(w, `{"more":true,"next":"token-%d","objects":[%s]}`, i, indicatorJSON(n))
			},
			requests: 3 + maxStalledPages,
		},
		"empty pages with fresh next": {
			page: func(i int, w http.ResponseWriter) {
				fmt.Fprintf(w, `{"more":true,"next":"token-%d","objects":[]}`, i)
			},
			requests: maxStalledPages,
		},
		"more without next, date not moving": {
			page: func(i int, w http.ResponseWriter) {
				w.Header().Set("X-TAXII-Date-Added-Last", addedAt(0))
				fmt.Fprintf(w, `{"more":true,"objects":[%s]}`, indicatorJSON(i))
			},
			requests: 2,
		},
		"more without next or date": {
			page: func(i int, w http.ResponseWriter) {
				fmt.Fprintf(w, `{"more":true,"objects":[%s]}`, indicatorJSON(i))
			},
			requests: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, 0)
			var count int
			hook := loopHook(tc.page)
			s.Hook = func(w http.ResponseWriter, r *http.Request) bool {
				if objectsRequest(r) {
					count++
					if count > 100 {
						t.Error("client keeps polling")
						http.Error(w, "stop", http.StatusTeapot)
						return true
					}
				}
				return hook(w, r)
			}
			_, err := newClient(100, &sleepRecorder{}).Fetch(context.Background(), s.CollectionURL(collID), "", &recSink{})
			if !errors.Is(err, ErrPagingLoop) || ioc.FailureOf(err) != ioc.FetchingDataError {
				t.Fatalf("Fetch = %v, want Fetching Data Error wrapping ErrPagingLoop", err)
			}
			if count != tc.requests {
				t.Errorf("%d objects requests before stopping, want %d", count, tc.requests)
			}
		})
	}
}

func TestFetchErrors(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()
	// A transport failure: classified as every feed's are.
	_, goneErr := http.Get(goneURL)
	goneKind := ioc.FailureOf(ioc.HTTPRequestFailure("taxii", goneErr))

	always := func(status int, header, value string) func(http.ResponseWriter, *http.Request) bool {
		return func(w http.ResponseWriter, r *http.Request) bool {
			if !objectsRequest(r) {
				return false
			}
			if header != "" {
				w.Header().Set(header, value)
			}
			w.WriteHeader(status)
			return true
		}
	}
	tests := map[string]struct {
		url      func(s *taxiitest.Server) string
		password string
		hook     func(http.ResponseWriter, *http.Request) bool
		want     ioc.FailureKind
		sleeps   int
	}{
		"wrong password":       {password: "nope", want: ioc.InvalidCredentials},
		"unreadable":           {url: func(s *taxiitest.Server) string { return s.CollectionURL(lockedID) }, want: ioc.InvalidCredentials},
		"unknown collection":   {url: func(s *taxiitest.Server) string { return s.CollectionURL("nope") }, want: ioc.InvalidCollectionURL},
		"alias in URL":         {url: func(s *taxiitest.Server) string { return s.CollectionURL(collAlias) }, want: ioc.InvalidCollectionURL},
		"not a collection URL": {url: func(s *taxiitest.Server) string { return s.URL + "/api1/collection/" + collID + "/" }, want: ioc.InvalidCollectionURL},
		"not http":             {url: func(*taxiitest.Server) string { return "ftp://example.com/api1/collections/x/" }, want: ioc.InvalidURL},
		"server gone":          {url: func(*taxiitest.Server) string { return goneURL + "/api1/collections/x/" }, want: goneKind},
		"server error":         {hook: always(http.StatusInternalServerError, "", ""), want: ioc.FetchingDataError},
		"not TAXII 2.1":        {hook: always(http.StatusNotAcceptable, "", ""), want: ioc.InvalidURL},
		"objects gone":         {hook: always(http.StatusNotFound, "", ""), want: ioc.InvalidCollectionURL},
		"HTML instead of JSON": {
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				if !objectsRequest(r) {
					return false
				}
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, "<html>login</html>")
				return true
			},
			want: ioc.FetchingDataError,
		},
		"bad date header": {
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				if !objectsRequest(r) {
					return false
				}
				w.Header().Set("Content-Type", MediaType)
				w.Header().Set("X-TAXII-Date-Added-Last", "yesterday")
				fmt.Fprintf(w, `{"objects":[%s]}`, indicatorJSON(1))
				return true
			},
			want: ioc.FetchingDataError,
		},
		"rate limited":             {hook: always(http.StatusTooManyRequests, "Retry-After", "2"), want: ioc.SurpassedQueryLimit, sleeps: DefaultMaxRetries},
		"rate limited for an hour": {hook: always(http.StatusTooManyRequests, "Retry-After", "3600"), want: ioc.SurpassedQueryLimit},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, 10)
			s.Hook = tc.hook
			rec := &sleepRecorder{}
			c := newClient(100, rec)
			if tc.password != "" {
				c.Password = tc.password
			}
			u := s.CollectionURL(collID)
			if tc.url != nil {
				u = tc.url(s)
			}
			sink := &recSink{}
			cursor, err := c.Fetch(context.Background(), u, "2026-01-01T00:00:00Z", sink)
			var fe *ioc.FetchError
			if !errors.As(err, &fe) || fe.Kind != tc.want {
				t.Fatalf("Fetch = %v, want %s", err, tc.want)
			}
			if cursor != "2026-01-01T00:00:00Z" || len(sink.cursors) != 0 {
				t.Errorf("failed fetch moved the cursor: %q, checkpoints %v", cursor, sink.cursors)
			}
			if len(rec.sleeps) != tc.sleeps {
				t.Errorf("slept %v, want %d sleeps", rec.sleeps, tc.sleeps)
			}
			for _, d := range rec.sleeps {
				if d != 2*time.Second {
					t.Errorf("slept %s, want the Retry-After of 2s", d)
				}
			}
		})
	}
}

func TestFetchRetriesAfter429(t *testing.T) {
	tests := map[string]struct {
		retryAfter string
		want       time.Duration
	}{
		"seconds":   {"7", 7 * time.Second},
		"HTTP date": {testNow.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		"missing":   {"", defaultRetryWait},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, 150)
			var mu sync.Mutex
			throttled := 0
			s.Hook = func(w http.ResponseWriter, r *http.Request) bool {
				mu.Lock()
				defer mu.Unlock()
				if !objectsRequest(r) || throttled == 2 {
					return false
				}
				throttled++
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(http.StatusTooManyRequests)
				return true
			}
			rec := &sleepRecorder{}
			sink := &recSink{}
			if _, err := newClient(100, rec).Fetch(context.Background(), s.CollectionURL(collID), "", sink); err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			wantValues(t, sink, 0, 150)
			if len(rec.sleeps) != 2 || rec.sleeps[0] != tc.want || rec.sleeps[1] != tc.want {
				t.Errorf("sleeps = %v, want two of %s", rec.sleeps, tc.want)
			}
		})
	}
}

func TestFetchStopsOnSinkErrorAndCancel(t *testing.T) {
	s := newServer(t, 300)
	c := newClient(100, &sleepRecorder{})

	sink := &recSink{failAfter: 150}
	cursor, err := c.Fetch(context.Background(), s.CollectionURL(collID), "", sink)
	if !errors.Is(err, errSinkFull) {
		t.Fatalf("Fetch = %v, want the sink's error", err)
	}
	if cursor != addedAt(99) {
		t.Errorf("cursor = %q, want the first page's %q", cursor, addedAt(99))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Fetch(ctx, s.CollectionURL(collID), "", &recSink{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestFetchExtractsSTIX(t *testing.T) {
	s := newServer(t, 0)
	s.Add(collID, base, map[string]any{
		"type": "indicator", "id": "indicator--x", "pattern_type": "stix", "confidence": 90,
		"labels": []string{"botnet"}, "indicator_types": []string{"malicious-activity"},
		"valid_until": "2027-01-01T00:00:00Z",
		"pattern":     "[domain-name:value = 'C2.Example.com'] AND [file:hashes.'SHA-1' = '3395856CE81F2B7382DEE72602F798B642F14140']",
	})
	s.Add(collID, base.Add(time.Millisecond), map[string]any{"type": "indicator", "id": "indicator--bad", "pattern_type": "stix", "pattern": "[nope"})
	sink := &recSink{}
	if _, err := newClient(100, &sleepRecorder{}).Fetch(context.Background(), s.CollectionURL(collID), "", sink); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	got := sink.stored
	if len(got) != 2 || got[0].Value != "c2.example.com" || got[1].Kind != ioc.SHA1 || got[1].Value != "3395856ce81f2b7382dee72602f798b642f14140" ||
		got[0].Score != 90 || strings.Join(got[0].Tags, ",") != "botnet,malicious-activity" || got[0].Source != collTitle {
		t.Errorf("stored %+v", got)
	}
	if len(sink.rejected) != 1 || sink.rejected[0].Pos != 2 {
		t.Errorf("rejected %+v, want object 2", sink.rejected)
	}
}

// signalSink closes first when the first indicator arrives.
type signalSink struct {
	recSink
	once  sync.Once
	first chan struct{}
}

func (s *signalSink) Indicator(ctx context.Context, ind ioc.Indicator) error {
	s.once.Do(func() { close(s.first) })
	return s.recSink.Indicator(ctx, ind)
}

// TestFetchStreamsPage shows that objects reach the sink while their page is
// still arriving: the server sends the rest of the page only after the sink
// has the first indicator, which a client reading whole pages never does.
func TestFetchStreamsPage(t *testing.T) {
	s := newServer(t, 0)
	sink := &signalSink{first: make(chan struct{})}
	s.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		if !objectsRequest(r) {
			return false
		}
		w.Header().Set("Content-Type", MediaType)
		w.Header().Set("X-TAXII-Date-Added-Last", addedAt(1))
		fmt.Fprintf(w, `{"more":false,"objects":[%s,`, indicatorJSON(0))
		w.(http.Flusher).Flush()
		select {
		case <-sink.first:
		case <-time.After(10 * time.Second): // a hang, not a speed check
			t.Error("the first object did not reach the sink before the page ended")
		}
		fmt.Fprintf(w, `%s]}`, indicatorJSON(1))
		return true
	}
	if _, err := newClient(100, &sleepRecorder{}).Fetch(context.Background(), s.CollectionURL(collID), "", sink); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	wantValues(t, &sink.recSink, 0, 2)
}
