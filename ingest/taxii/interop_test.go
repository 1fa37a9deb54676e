package taxii

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/taxii/taxiitest"
	"github.com/tifeeds/tifeeds/ioc"
)

// newMedallion starts a server paging like the OASIS reference server,
// holding n indicators, at most 100 a page.
func newMedallion(t testing.TB, n int) *taxiitest.Server {
	s := newServer(t, n)
	s.Sessions, s.MaxPageSize = true, 100
	return s
}

// TestFetchMedallion walks a collection whose every page carries the same
// next: one session, 1,500 indicators, all of them in one fetch.
func TestFetchMedallion(t *testing.T) {
	const n = 1500
	s := newMedallion(t, n)
	sink := &recSink{}
	since := base.Add(-time.Hour).Format(cursorLayout)
	cursor, err := newClient(100, &sleepRecorder{}).Fetch(context.Background(), s.CollectionURL(collID), since, sink)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	wantValues(t, sink, 0, n)
	if cursor != addedAt(n-1) {
		t.Errorf("cursor = %q, want %q", cursor, addedAt(n-1))
	}
	reqs := s.Requests()
	if len(reqs) != n/100 {
		t.Fatalf("%d requests, want %d", len(reqs), n/100)
	}
	token := reqs[1].Next
	for i, r := range reqs {
		want := token
		if i == 0 {
			want = ""
		}
		if r.Next != want || r.AddedAfter != since || r.Limit != "100" || r.Refused {
			t.Fatalf("request %d = %+v, want next %q, added_after %q, limit 100", i, r, want, since)
		}
	}
	if token == "" {
		t.Error("the server sent no next")
	}
}

// TestFetchMedallionEmpty reads a walk with nothing to send: {}.
func TestFetchMedallionEmpty(t *testing.T) {
	s := newMedallion(t, 10)
	sink := &recSink{}
	cursor, err := newClient(100, &sleepRecorder{}).Fetch(context.Background(), s.CollectionURL(collID), addedAt(9), sink)
	if err != nil || cursor != addedAt(9) || len(sink.all()) != 0 || len(sink.cursors) != 0 {
		t.Fatalf("Fetch = %q, %v; %d indicators, checkpoints %v", cursor, err, len(sink.all()), sink.cursors)
	}
}

// expiringSink expires the server's sessions at its nth checkpoint.
type expiringSink struct {
	source.SinkBase
	recSink
	nth    int
	expire func()
}

func (e *expiringSink) Checkpoint(ctx context.Context, cursor string) error {
	if err := e.recSink.Checkpoint(ctx, cursor); err != nil {
		return err
	}
	if len(e.cursors) == e.nth {
		e.expire()
	}
	return nil
}

// TestFetchRestartsWhenNextRefused: a session that expires mid-walk makes
// the fetch start a new walk from its cursor, never sending the refused
// next again, and every indicator arrives once.
func TestFetchRestartsWhenNextRefused(t *testing.T) {
	tests := map[string]func(s *taxiitest.Server) func(){
		"expired by the server": func(s *taxiitest.Server) func() { return s.ExpireSessions },
		"idle past the session timeout": func(s *taxiitest.Server) func() {
			var mu sync.Mutex
			now := base
			s.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			// Past medallion's 30 s on the server's clock only: the next
			// request finds its session gone, and no other does.
			return func() { mu.Lock(); defer mu.Unlock(); now = now.Add(31 * time.Second) }
		},
	}
	for name, expire := range tests {
		t.Run(name, func(t *testing.T) {
			const n = 1000
			s := newMedallion(t, n)
			sink := &expiringSink{nth: 4, expire: expire(s)}
			cursor, err := newClient(100, &sleepRecorder{}).Fetch(context.Background(), s.CollectionURL(collID), "", sink)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			wantValues(t, &sink.recSink, 0, n)
			if cursor != addedAt(n-1) {
				t.Errorf("cursor = %q, want %q", cursor, addedAt(n-1))
			}
			reqs := s.Requests()
			refused := -1
			for i, r := range reqs {
				if r.Refused {
					if refused >= 0 {
						t.Fatalf("requests %d and %d refused", refused, i)
					}
					refused = i
				}
			}
			if refused < 0 {
				t.Fatalf("no next was refused: %+v", reqs)
			}
			if r := reqs[refused+1]; r.Next != "" || r.AddedAfter != addedAt(4*100-1) {
				t.Errorf("request after the refusal = %+v, want a new walk from the cursor %s", r, addedAt(399))
			}
			for _, r := range reqs[refused+1:] {
				if r.Next == reqs[refused].Next {
					t.Fatalf("the refused next was sent again: %+v", r)
				}
			}
		})
	}
}

// TestFetchRefusedNextWithoutProgress fails a fetch whose restarted walk
// stores nothing before its next is refused again.
func TestFetchRefusedNextWithoutProgress(t *testing.T) {
	s := newServer(t, 0)
	var requests int
	s.Hook = loopHook(func(i int, w http.ResponseWriter) {
		requests = i
		switch i {
		case 1:
			w.Header().Set("X-TAXII-Date-Added-Last", addedAt(1))
			fmt.Fprintf(w, `{"more":true,"next":"a","objects":[%s]}`, indicatorJSON(1))
		case 3:
			fmt.Fprint(w, `{"more":true,"next":"b","objects":[]}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	_, err := newClient(100, &sleepRecorder{}).Fetch(context.Background(), s.CollectionURL(collID), "", &recSink{})
	if err == nil || ioc.FailureOf(err) != ioc.FetchingDataError || !strings.Contains(err.Error(), "refused again") {
		t.Fatalf("Fetch = %v, want Fetching Data Error for a next refused again", err)
	}
	if requests != 4 {
		t.Errorf("%d requests, want 4 (page, refused, restart, refused)", requests)
	}
}

// endless answers every objects request with a new page and more: true
// (up to a guard, so that a client without caps fails instead of hanging).
func endless(pageSize int) func(http.ResponseWriter, *http.Request) bool {
	return loopHook(func(i int, w http.ResponseWriter) {
		if i > 10_000 {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		first := (i - 1) * pageSize
		w.Header().Set("X-TAXII-Date-Added-Last", addedAt(first+pageSize-1))
		objs := make([]string, pageSize)
		for k := range objs {
			objs[k] = indicatorJSON(first + k)
		}
		fmt.Fprintf(w, `{"more":true,"next":"same","objects":[%s]}`, strings.Join(objs, ","))
	})
}

// TestFetchStopsAtRunCaps: a server that never stops saying more ends
// the fetch at a cap, with everything checkpointed.
func TestFetchStopsAtRunCaps(t *testing.T) {
	tests := map[string]struct {
		set   func(c *Client)
		pages int
		cap   string
	}{
		"pages":   {func(c *Client) { c.MaxPages = 5 }, 5, "5 pages"},
		"objects": {func(c *Client) { c.MaxObjects = 25 }, 3, "25 objects"},
		"time": {func(c *Client) {
			var mu sync.Mutex
			now := testNow
			c.Now = func() time.Time { // a minute a call
				mu.Lock()
				defer mu.Unlock()
				now = now.Add(time.Minute)
				return now
			}
			c.MaxRunTime = 4 * time.Minute
		}, 4, "4m0s"}, // the clock is read once before the first page and after each
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, 0)
			s.Hook = endless(10)
			c := newClient(10, &sleepRecorder{})
			tc.set(c)
			sink := &recSink{}
			cursor, err := c.Fetch(context.Background(), s.CollectionURL(collID), "", sink)
			if !errors.Is(err, ErrRunCapped) || !strings.Contains(err.Error(), tc.cap) {
				t.Fatalf("Fetch = %v, want ErrRunCapped at %s", err, tc.cap)
			}
			if want := addedAt(tc.pages*10 - 1); cursor != want || len(sink.cursors) != tc.pages || len(sink.pending) != 0 {
				t.Errorf("cursor %q (want %q), checkpoints %d (want %d), %d pending", cursor, want, len(sink.cursors), tc.pages, len(sink.pending))
			}
			wantValues(t, sink, 0, tc.pages*10)
		})
	}
}

// bigEnvelope writes a valid envelope of about size bytes: many small
// objects, or one huge string.
func bigEnvelope(w *bytes.Buffer, size int, oneString bool) {
	if oneString {
		w.WriteString(`{"more":false,"objects":[{"type":"indicator","description":"`)
		w.WriteString(strings.Repeat("A", size))
		w.WriteString(`"}]}`)
		return
	}
	w.WriteString(`{"more":false,"objects":[`)
	obj := `{"type":"note","content":"x"}`
	for i := 0; i < size/len(obj); i++ {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString(obj)
	}
	w.WriteString(`]}`)
}

// TestFetchBoundsBodies: a gzip bomb, a body over the page bound and a
// huge JSON value fail the fetch with a Fetching Data Error saying which
// bound, without taking memory in proportion to the body.
func TestFetchBoundsBodies(t *testing.T) {
	const maxPage, maxValue, size = 1 << 20, 64 << 10, 48 << 20
	var plainPage, plainValue, bomb, hugeKey bytes.Buffer
	bigEnvelope(&plainPage, 4*maxPage, false)
	bigEnvelope(&plainValue, 4*maxPage, true)
	gz := gzip.NewWriter(&bomb)
	var inflated bytes.Buffer
	bigEnvelope(&inflated, size, false)
	gz.Write(inflated.Bytes())
	gz.Close()
	inflated = bytes.Buffer{}
	fmt.Fprintf(&hugeKey, `{"more":false,"x":{"a":"%s"},"objects":[]}`, strings.Repeat("B", 2*maxValue))

	tests := map[string]struct {
		body     []byte
		encoding string
		want     string
	}{
		"gzip bomb":            {bomb.Bytes(), "gzip", fmt.Sprintf("larger than %d bytes once decompressed", maxPage)},
		"plain body too large": {plainPage.Bytes(), "", fmt.Sprintf("larger than %d bytes", maxPage)},
		"huge string":          {plainValue.Bytes(), "", fmt.Sprintf("JSON value of the envelope is larger than %d bytes", maxValue)},
		"huge unknown member":  {hugeKey.Bytes(), "", fmt.Sprintf("JSON value of the envelope is larger than %d bytes", maxValue)},
		"unsupported encoding": {[]byte("{}"), "br", `unsupported Content-Encoding "br"`},
		"corrupt gzip":         {append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, bytes.Repeat([]byte{0xff}, 64)...), "gzip", "gzip body is corrupt"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, 0)
			s.Hook = loopHook(func(_ int, w http.ResponseWriter) {
				if tc.encoding != "" {
					w.Header().Set("Content-Encoding", tc.encoding)
				}
				w.Write(tc.body)
			})
			c := newClient(100, &sleepRecorder{})
			c.MaxPageBytes, c.MaxValueBytes = maxPage, maxValue
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := c.Fetch(context.Background(), s.CollectionURL(collID), "", &recSink{})
			runtime.ReadMemStats(&after)
			if err == nil || ioc.FailureOf(err) != ioc.FetchingDataError || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Fetch = %v, want Fetching Data Error saying %q", err, tc.want)
			}
			// Allocations, not timing: the client reads at most the bounds
			// (the bodies are 4 to 48 times larger).
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
				t.Errorf("the fetch allocated %d MiB", alloc>>20)
			}
		})
	}
}

// TestFetchErrorQuotesStatusLineOnly: an error answer's body never reaches
// the error, which users see.
func TestFetchErrorQuotesStatusLineOnly(t *testing.T) {
	s := newServer(t, 10)
	s.Hook = loopHook(func(_ int, w http.ResponseWriter) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"title":"internal page secret-4242","description":"<html>admin</html>"}`)
	})
	_, err := newClient(100, &sleepRecorder{}).Fetch(context.Background(), s.CollectionURL(collID), "", &recSink{})
	if err == nil || ioc.FailureOf(err) != ioc.FetchingDataError || !strings.Contains(err.Error(), "500 Internal Server Error") ||
		strings.Contains(err.Error(), "secret-4242") || strings.Contains(err.Error(), "admin") {
		t.Fatalf("Fetch = %v, want the status line and nothing of the body", err)
	}
}
