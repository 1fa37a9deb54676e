package phishtank

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ioc"
)

func phish(v string, tags ...string) ioc.Indicator {
	return ioc.Indicator{Kind: ioc.URL, Value: v, Source: List, Score: Score, Tags: append([]string{"phishing"}, tags...)}
}

func TestParse(t *testing.T) {
	for name, tc := range map[string]struct {
		file     string
		want     []ioc.Indicator
		rejected []string // prefixes
		err      string
	}{
		"online-valid with brand names, commas, details and bad records": {
			file: "online-valid.json",
			want: []ioc.Indicator{
				// Brand names in target are tags, never domains; the
				// hosting addresses in details are never indicators.
				phish("https://account-update.example.com/amazon/signin/", "target:amazon.com"),
				phish("https://aeon-card.example.net/login,verify?step=1,2", "target:aeon card"),
				phish("http://secure-paypal.example.org/webscr?cmd=_login", "target:paypal"),
				phish("http://198.51.100.7/wp-content/office365/"),
				phish("https://xn--bcher-kva.example.com/konto"),
			},
			rejected: []string{"5: no url", "6: skipped: not verified and online", "7: invalid indicator", "8: not a PhishTank record"},
		},
		"not an array":   {file: "not-array.json", err: "not a JSON array"},
		"cut mid-record": {file: "truncated.json", err: "unable to read record 2"},
	} {
		t.Run(name, func(t *testing.T) {
			var rec vendortest.Recorder
			err := Parse(context.Background(), bytes.NewReader(vendortest.Testdata(t, tc.file)), &rec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rec.Indicators, tc.want) {
				t.Errorf("indicators\n got %+v\nwant %+v", rec.Indicators, tc.want)
			}
			if len(rec.Rejections) != len(tc.rejected) {
				t.Fatalf("rejected %q, want %q", rec.Rejections, tc.rejected)
			}
			for i, r := range rec.Rejections {
				if !strings.HasPrefix(r, tc.rejected[i]) {
					t.Errorf("rejection %d is %q, want %q…", i, r, tc.rejected[i])
				}
			}
			for _, ind := range rec.Indicators {
				if ind.Kind != ioc.URL {
					t.Errorf("%s indicator %s: only URLs come from PhishTank", ind.Kind, ind.Value)
				}
			}
		})
	}
}

func fastSource(srv *vendortest.Server) *Source {
	return &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), RetryBackoff: time.Millisecond, MaxRetryWait: time.Second}}
}

func TestFetch(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	lastMod := time.Date(2026, 11, 2, 11, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		key     string
		vendor  *vendortest.PhishTank
		cursor  string
		want    int // indicators
		cursorW string
		err     error
		kind    ioc.FailureKind
		tries   int
	}{
		"keyless download": {
			vendor: &vendortest.PhishTank{ETag: `"v1"`, LastModified: lastMod},
			want:   5, cursorW: `{"etag":"\"v1\"","last_modified":"Mon, 02 Nov 2026 11:00:00 GMT"}`, tries: 1,
		},
		"app key in the path": {
			key: key, vendor: &vendortest.PhishTank{Key: key, ETag: `"v1"`},
			want: 5, cursorW: `{"etag":"\"v1\""}`, tries: 1,
		},
		"unchanged since the cursor's ETag": {
			vendor: &vendortest.PhishTank{ETag: `"v1"`}, cursor: `{"etag":"\"v1\""}`,
			cursorW: `{"etag":"\"v1\""}`, err: ioc.ErrUnchanged, tries: 1,
		},
		"unchanged since the cursor's Last-Modified": {
			vendor: &vendortest.PhishTank{LastModified: lastMod}, cursor: `{"last_modified":"Mon, 02 Nov 2026 11:00:00 GMT"}`,
			cursorW: `{"last_modified":"Mon, 02 Nov 2026 11:00:00 GMT"}`, err: ioc.ErrUnchanged, tries: 1,
		},
		"changed since the cursor": {
			vendor: &vendortest.PhishTank{ETag: `"v2"`}, cursor: `{"etag":"\"v1\""}`,
			want: 5, cursorW: `{"etag":"\"v2\""}`, tries: 1,
		},
		"509 Bandwidth Limit Exceeded is not repeated": {
			vendor: &vendortest.PhishTank{FileFaults: vendortest.FileFaults{Status: 509}},
			kind:   ioc.SurpassedQueryLimit, tries: 1,
		},
		"one 429 with Retry-After is waited out": {
			vendor: &vendortest.PhishTank{FileFaults: vendortest.FileFaults{Status: 429, StatusTimes: 1, RetryAfter: "0"}},
			want:   5, tries: 2,
		},
		"a persistent 429": {
			vendor: &vendortest.PhishTank{FileFaults: vendortest.FileFaults{Status: 429, RetryAfter: "0"}},
			kind:   ioc.SurpassedQueryLimit, tries: 1 + DefaultMaxRetries,
		},
		"a Retry-After over the cap fails at once": {
			vendor: &vendortest.PhishTank{FileFaults: vendortest.FileFaults{Status: 429, RetryAfter: "3600"}},
			kind:   ioc.SurpassedQueryLimit, tries: 1,
		},
		"a persistent 503": {
			vendor: &vendortest.PhishTank{FileFaults: vendortest.FileFaults{Status: 503}},
			kind:   ioc.FetchingDataError, tries: 1 + DefaultMaxRetries,
		},
		"a wrong app key": {
			key: "wrong" + key, vendor: &vendortest.PhishTank{Key: key},
			kind: ioc.InvalidCredentials, tries: 1,
		},
		"a body cut mid-way": {
			vendor: &vendortest.PhishTank{FileFaults: vendortest.FileFaults{CutAt: 300}},
			kind:   ioc.ConnectionError, tries: 1,
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := vendortest.New(t)
			v := tc.vendor
			v.JSON = vendortest.Testdata(t, "online-valid.json")
			srv.Handle("data.phishtank.com", v)
			var rec vendortest.Recorder
			cursor, err := fastSource(srv).fetch(context.Background(), source.Request{Cursor: tc.cursor, Feed: source.Feed{Key: tc.key}}, &rec)
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
			case tc.kind != "":
				if err == nil || ioc.FailureOf(err) != tc.kind {
					t.Fatalf("error %v, want %s", err, tc.kind)
				}
			case err != nil:
				t.Fatal(err)
			}
			if tc.key != "" && err != nil && strings.Contains(err.Error(), key) {
				t.Errorf("the error quotes the app key: %v", err)
			}
			if len(rec.Indicators) != tc.want {
				t.Errorf("%d indicators, want %d", len(rec.Indicators), tc.want)
			}
			complete := tc.want > 0
			if got := len(rec.Lists) == 1 && rec.Lists[0] == List; got != complete {
				t.Errorf("lists completed %q; want the list completed: %v", rec.Lists, complete)
			}
			if err != nil && !errors.Is(err, ioc.ErrUnchanged) && cursor != tc.cursor {
				t.Errorf("a failed fetch moved the cursor to %q", cursor)
			}
			if tc.cursorW != "" && cursor != tc.cursorW {
				t.Errorf("cursor %q, want %q", cursor, tc.cursorW)
			}
			if n := v.Requests(); n != tc.tries {
				t.Errorf("%d requests, want %d", n, tc.tries)
			}
			reqs := srv.Requests()
			if len(reqs) > 0 {
				wantPath := "/data/online-valid.json.gz"
				if tc.key != "" {
					wantPath = "/data/" + tc.key + "/online-valid.json.gz"
				}
				if p := reqs[0].URL.Path; p != wantPath {
					t.Errorf("path %q, want %q", p, wantPath)
				}
			}
		})
	}
}

// A connection that fails names the URL; the key in its path is masked.
func TestFetchMasksTheKeyInConnectionErrors(t *testing.T) {
	const key = "s3cr3t-app-key"
	s := &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient("http://127.0.0.1:1"), MaxRetries: -1}}
	_, err := s.fetch(context.Background(), source.Request{Feed: source.Feed{Key: key}}, &vendortest.Recorder{})
	if err == nil {
		t.Fatal("no error")
	}
	if ioc.FailureOf(err) != ioc.FailedToConnect {
		t.Errorf("kind %s, want %s (%v)", ioc.FailureOf(err), ioc.FailedToConnect, err)
	}
	if strings.Contains(err.Error(), key) {
		t.Errorf("the error quotes the key: %v", err)
	}
	if !strings.Contains(err.Error(), "/data/***/online-valid.json.gz") {
		t.Errorf("the error does not name the masked URL: %v", err)
	}
}

// An error of the sink (the run's limit, the store) ends the fetch as it is.
func TestFetchPassesSinkErrors(t *testing.T) {
	srv := vendortest.New(t)
	srv.Handle("data.phishtank.com", &vendortest.PhishTank{JSON: vendortest.Testdata(t, "online-valid.json")})
	stop := errors.New("limit reached")
	rec := &vendortest.Recorder{Fail: stop}
	_, err := fastSource(srv).fetch(context.Background(), source.Request{}, rec)
	if !errors.Is(err, stop) {
		t.Fatalf("error %v, want the sink's", err)
	}
	var fe *ioc.FetchError
	if errors.As(err, &fe) {
		t.Errorf("the sink's error became a %s", fe.Kind)
	}
	if len(rec.Lists) != 0 {
		t.Errorf("a list read partially was completed: %q", rec.Lists)
	}
}

// A 50 MB database streams in flat memory: the live heap, sampled while
// the records flow, stays far below the size of the body.
func TestFetchStreamsABigDatabaseInFlatMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("50 MB body")
	}
	const records = 110_000 // about 50 MB of JSON
	var counted countingWriter
	if err := vendortest.WritePhishTankJSON(&counted, records); err != nil {
		t.Fatal(err)
	}
	if counted.n < 45<<20 {
		t.Fatalf("the generated body is %d bytes, want about 50 MB", counted.n)
	}
	srv := vendortest.New(t)
	srv.Handle("data.phishtank.com", &vendortest.PhishTank{Generate: records, ETag: `"big"`})
	var peak uint64
	sample := func() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	rec := &lastOnly{onInd: func(n int) {
		if n%10_000 == 0 {
			sample()
		}
	}}
	sample()
	base := peak
	_, err := fastSource(srv).fetch(context.Background(), source.Request{}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.last.Value; got != fmt.Sprintf("https://login-%d.example.com/account/verify.php?session=%d", records-1, records-1) {
		t.Errorf("last URL %q", got)
	}
	if rec.count != records || len(rec.Lists) != 1 {
		t.Errorf("%d indicators, lists completed %q; want %d and the list", rec.count, rec.Lists, records)
	}
	const bound = 16 << 20
	if grown := peak - min(base, peak); grown > bound {
		t.Errorf("the heap grew by %d MiB while reading a %d MiB body, want under %d MiB", grown>>20, counted.n>>20, bound>>20)
	}
}

// lastOnly keeps only the last indicator, so that memory stays flat in a
// big run.
type lastOnly struct {
	vendortest.Recorder
	last  ioc.Indicator
	count int
	onInd func(n int)
}

func (l *lastOnly) Indicator(_ context.Context, ind ioc.Indicator) error {
	l.last = ind
	l.count++
	l.onInd(l.count)
	return nil
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
