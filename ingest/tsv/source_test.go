package tsv_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/source/sourcetest"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
)

// loopback is a client allowed to fetch from the tests' loopback servers,
// which the egress policy refuses by default.
var loopback = egress.NewClient(egress.Options{AllowPrivate: true})

// recorder is a sink that keeps what it is given.
type recorder struct {
	source.SinkBase
	inds        []ioc.Indicator
	rejected    map[int64]string
	checkpoints []string
}

func newRecorder() *recorder { return &recorder{rejected: map[int64]string{}} }

func (r *recorder) Indicator(_ context.Context, ind ioc.Indicator) error {
	r.inds = append(r.inds, ind)
	return nil
}
func (r *recorder) Rejected(pos int64, reason string) { r.rejected[pos] = reason }
func (r *recorder) Checkpoint(_ context.Context, c string) error {
	r.checkpoints = append(r.checkpoints, c)
	return nil
}

func (r *recorder) values() string {
	var v []string
	for _, ind := range r.inds {
		v = append(v, ind.Value)
	}
	return strings.Join(v, ",")
}

// rows makes a TSV body of n good ip rows, 10.0.0.1 ... 10.0.0.n.
func rows(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "ip\t10.0.0.%d\tsrc\t90\n", i)
	}
	return b.String()
}

func serveBody(t *testing.T, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io := strings.NewReader(body)
		http.ServeContent(w, r, "feed.tsv", time.Time{}, io)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchReadsInChunks(t *testing.T) {
	body := "\xef\xbb\xbfip\t10.0.0.1\tsrc\t90\r\n" + // BOM, CRLF
		"# comment\n" +
		"ip\tnot-an-ip\tsrc\t90\n" + // line 3 rejected
		"domain\tExample.COM.\tsrc\t50\n" +
		"\n" +
		"md5-hash\tD41D8CD98F00B204E9800998ECF8427E\tsrc-1\t100\n" +
		"url\thttp://x.example/a\tsrc\t101\n" + // line 7 rejected
		"sha1-hash\tda39a3ee5e6b4b0d3255bfef95601890afd80709\tsrc\t0" // no final newline
	srv := serveBody(t, body)
	rec := newRecorder()
	src := &tsv.Source{Client: loopback, ChunkLines: 3, TempDir: t.TempDir()}
	cursor, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Limit: 0, Feed: source.Feed{URL: srv.URL + "/feed.tsv"}}, rec)
	if err != nil || cursor != "" {
		t.Fatalf("cursor %q, err %v", cursor, err)
	}
	want := "10.0.0.1,example.com,d41d8cd98f00b204e9800998ecf8427e,da39a3ee5e6b4b0d3255bfef95601890afd80709"
	if rec.values() != want {
		t.Errorf("values = %s, want %s", rec.values(), want)
	}
	if len(rec.rejected) != 2 || rec.rejected[3] == "" || rec.rejected[7] == "" {
		t.Errorf("rejected = %v, want lines 3 and 7", rec.rejected)
	}
	for _, ind := range rec.inds {
		if len(ind.Tags) != 1 || ind.Tags[0] != tsv.Tag {
			t.Errorf("%s tags = %v", ind.Value, ind.Tags)
		}
	}
	if got := strings.Join(rec.checkpoints, " "); got != "line:3 line:6 line:8 " {
		t.Errorf("checkpoints = %q", got)
	}
	entries, _ := os.ReadDir(src.TempDir)
	if len(entries) != 0 {
		t.Errorf("temporary file left behind: %v", entries)
	}
}

func TestFetchResumesAndLimits(t *testing.T) {
	// Lines 2 and 5 are bad, so line numbers and indicator counts differ.
	body := "ip\t10.0.0.1\ts\t1\nbad\n" + "ip\t10.0.0.3\ts\t1\nip\t10.0.0.4\ts\t1\nbad\n" +
		"ip\t10.0.0.6\ts\t1\nip\t10.0.0.7\ts\t1\nip\t10.0.0.8\ts\t1\n"
	srv := serveBody(t, body)
	cases := map[string]struct {
		cursor      string
		limit       int64
		wantValues  string
		wantCursor  string
		wantLimit   bool
		wantRejects string
	}{
		"from the top, no limit":    {"", 0, "10.0.0.1,10.0.0.3,10.0.0.4,10.0.0.6,10.0.0.7,10.0.0.8", "", false, "2,5"},
		"limit stops on its line":   {"", 3, "10.0.0.1,10.0.0.3,10.0.0.4", "line:4", true, "2"},
		"resume after the limit":    {"line:4", 3, "10.0.0.6,10.0.0.7,10.0.0.8", "", false, "5"},
		"resume mid file":           {"line:6", 0, "10.0.0.7,10.0.0.8", "", false, ""},
		"limit ends with the file":  {"line:5", 3, "10.0.0.6,10.0.0.7,10.0.0.8", "", false, ""},
		"cursor past the end":       {"line:99", 1, "10.0.0.1", "line:1", true, ""},
		"unreadable cursor is top":  {"2026-01-01", 1, "10.0.0.1", "line:1", true, ""},
		"limit of one, next chunks": {"line:1", 1, "10.0.0.3", "line:3", true, "2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := newRecorder()
			src := &tsv.Source{Client: loopback, ChunkLines: 2, TempDir: t.TempDir()}
			cursor, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: tc.cursor, Limit: tc.limit, Feed: source.Feed{URL: srv.URL}}, rec)
			if tc.wantLimit != errors.Is(err, source.ErrLimitReached) || (!tc.wantLimit && err != nil) {
				t.Fatalf("err = %v, want limit reached %v", err, tc.wantLimit)
			}
			if cursor != tc.wantCursor {
				t.Errorf("cursor = %q, want %q", cursor, tc.wantCursor)
			}
			if rec.values() != tc.wantValues {
				t.Errorf("values = %s, want %s", rec.values(), tc.wantValues)
			}
			var rej []string
			for _, p := range []int64{1, 2, 3, 4, 5, 6, 7, 8} {
				if rec.rejected[p] != "" {
					rej = append(rej, fmt.Sprint(p))
				}
			}
			if strings.Join(rej, ",") != tc.wantRejects {
				t.Errorf("rejected lines = %v, want %s", rej, tc.wantRejects)
			}
			if tc.wantLimit && (len(rec.checkpoints) == 0 || rec.checkpoints[len(rec.checkpoints)-1] != tc.wantCursor) {
				t.Errorf("checkpoints = %v: the limit's cursor was not checkpointed", rec.checkpoints)
			}
		})
	}
}

func TestFetchLongLine(t *testing.T) {
	body := "ip\t10.0.0.1\ts\t1\n" + "url\thttp://x/" + strings.Repeat("a", 200<<10) + "\ts\t1\n" + "ip\t10.0.0.3\ts\t1\n"
	srv := serveBody(t, body)
	rec := newRecorder()
	src := &tsv.Source{Client: loopback, ChunkLines: 1, TempDir: t.TempDir()}
	if _, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Limit: 0, Feed: source.Feed{URL: srv.URL}}, rec); err != nil {
		t.Fatal(err)
	}
	if rec.values() != "10.0.0.1,10.0.0.3" || rec.rejected[2] == "" {
		t.Errorf("values %s, rejected %v", rec.values(), rec.rejected)
	}
}

func TestFetchSendsBasicAuth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != "alice" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, rows(2))
	}))
	defer srv.Close()
	rec := newRecorder()
	src := &tsv.Source{Client: loopback, TempDir: t.TempDir()}
	if _, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Limit: 0, Feed: source.Feed{URL: srv.URL, Username: "alice", Password: "s3cret"}}, rec); err != nil || len(rec.inds) != 2 {
		t.Fatalf("with credentials: %v, %d indicators", err, len(rec.inds))
	}
	_, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Limit: 0, Feed: source.Feed{URL: srv.URL, Username: "alice", Password: "wrong"}}, newRecorder())
	if ioc.FailureOf(err) != ioc.InvalidCredentials {
		t.Errorf("wrong password: %v", err)
	}
}

func TestFetchFailures(t *testing.T) {
	status := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }
	}
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr + "/feed.tsv"
	}()
	release := make(chan struct{})
	defer close(release)
	cases := map[string]struct {
		handler  http.HandlerFunc
		url      string // instead of a server
		maxBytes int64
		timeout  time.Duration
		want     ioc.FailureKind
		detail   string
	}{
		"401":                {handler: status(401), want: ioc.InvalidCredentials},
		"403":                {handler: status(403), want: ioc.InvalidCredentials},
		"404":                {handler: status(404), want: ioc.InvalidURL},
		"429":                {handler: status(429), want: ioc.SurpassedQueryLimit},
		"500":                {handler: status(500), want: ioc.FetchingDataError},
		"refused":            {url: refused, want: ioc.FailedToConnect},
		"unresolvable host":  {url: "http://no-such-host.invalid/feed.tsv", want: ioc.FailedToConnect},
		"user info":          {url: strings.Replace(refused, "//", "//alice:s3cret@", 1), want: ioc.InvalidURL, detail: "user information"},
		"not http":           {url: "ftp://example.com/feed.tsv", want: ioc.InvalidURL},
		"no host":            {url: "http:///feed.tsv", want: ioc.InvalidURL},
		"relative":           {url: "feed.tsv", want: ioc.InvalidURL},
		"too large declared": {handler: bodyOf(rows(100), true), maxBytes: 1000, want: ioc.FetchingDataError, detail: "under 1000 bytes"},
		"too large chunked":  {handler: bodyOf(rows(100), false), maxBytes: 1000, want: ioc.FetchingDataError, detail: "under 1000 bytes"},
		"exactly the limit":  {handler: bodyOf(rows(10)[:100], false), maxBytes: 100, want: ioc.FetchingDataError, detail: "under 100 bytes"},
		"short body": {handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100000")
			fmt.Fprint(w, rows(3))
		}, want: ioc.ConnectionError, detail: "broke off"},
		"broken connection": {handler: func(w http.ResponseWriter, r *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			fmt.Fprint(conn, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nip\t10.0.0.1\ts\t1\n")
			conn.Close()
		}, want: ioc.ConnectionError, detail: "broke off"},
		"slow body": {handler: func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, rows(3))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}, timeout: 300 * time.Millisecond, want: ioc.ConnectionError, detail: "did not complete within"},
		"no answer": {handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}, timeout: 300 * time.Millisecond, want: ioc.ConnectionError, detail: "no answer within"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := tc.url
			if tc.handler != nil {
				srv := httptest.NewServer(tc.handler)
				defer srv.Close()
				u = srv.URL + "/feed.tsv"
			}
			rec := newRecorder()
			src := &tsv.Source{Client: loopback, MaxBytes: tc.maxBytes, Timeout: tc.timeout, TempDir: t.TempDir()}
			cursor, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "line:7", Limit: 0, Feed: source.Feed{URL: u}}, rec)
			var fe *ioc.FetchError
			if !errors.As(err, &fe) || fe.Kind != tc.want {
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
			if tc.detail != "" && !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("err = %v, want it to say %q", err, tc.detail)
			}
			if cursor != "line:7" || len(rec.inds) != 0 || len(rec.checkpoints) != 0 {
				t.Errorf("a failed download applied something: cursor %q, %d indicators, checkpoints %v",
					cursor, len(rec.inds), rec.checkpoints)
			}
			entries, _ := os.ReadDir(src.TempDir)
			if len(entries) != 0 {
				t.Errorf("temporary file left behind: %v", entries)
			}
		})
	}
}

func TestFetchCancelled(t *testing.T) {
	srv := serveBody(t, rows(10))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := sourcetest.Fetch(ctx, &tsv.Source{Client: loopback, TempDir: t.TempDir()}, source.Request{Cursor: "", Limit: 0, Feed: source.Feed{URL: srv.URL}}, newRecorder())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled (not a feed failure)", err)
	}
}

func bodyOf(body string, declareLength bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if declareLength {
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		}
		for i := 0; i < len(body); i += 64 {
			fmt.Fprint(w, body[i:min(i+64, len(body))])
			if !declareLength {
				w.(http.Flusher).Flush()
			}
		}
	}
}

// TestFetchDefaultPolicy: a source without a client of its own fetches
// under the egress policy's defaults, which refuse loopback.
func TestFetchDefaultPolicy(t *testing.T) {
	srv := serveBody(t, rows(3))
	rec := newRecorder()
	_, err := sourcetest.Fetch(context.Background(), &tsv.Source{TempDir: t.TempDir()}, source.Request{Cursor: "", Limit: 0, Feed: source.Feed{URL: srv.URL + "/feed.tsv?key=s3cret"}}, rec)
	if k := ioc.FailureOf(err); k != ioc.InvalidURL {
		t.Fatalf("kind %q, want Invalid URL: %v", k, err)
	}
	for _, want := range []string{"127.0.0.1", egress.Setting, "key=***"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("%q shows the query token", err)
	}
	if len(rec.inds) != 0 {
		t.Fatal("indicators were read")
	}
}
