package openphish_test

import (
	"context"
	"errors"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/openphish"
	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/source/sourcetest"
	"github.com/tifeeds/tifeeds/ioc"
)

func serve(t *testing.T, file string) (*vendortest.Server, *vendortest.OpenPhish, *openphish.Source) {
	t.Helper()
	srv := vendortest.New(t)
	op := &vendortest.OpenPhish{}
	op.Set(string(vendortest.Testdata(t, file)))
	srv.Handle(vendortest.OpenPhishHost, op)
	return srv, op, &openphish.Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), MaxRetryWait: 50 * time.Millisecond}}
}

func TestParse(t *testing.T) {
	for name, tc := range map[string]struct {
		file     string
		want     []string
		rejected []string
	}{
		// Trailing slashes and schemes are kept: each listed URL is its own
		// indicator (REFERENCE.md B7 pitfalls); the host is lower-cased,
		// path and query are kept byte for byte.
		"real layout": {file: "feed.txt", want: []string{
			"http://login.example.com/cxxc/Owa/",
			"https://secure-bank.example.net/Client/tang/step4.html",
			"http://secure-bank.example.net/Client/tang/",
			"http://secure-bank.example.net/Client/tang",
			"https://hmrc.refund.example.org/refund/details?id=42&ref=a%20b",
		}},
		"crlf, blanks, spaces, a bad line": {file: "crlf.txt", want: []string{
			"http://login.example.com/a",
			"https://shop.example.com/pay",
			"http://198.51.100.7:8080/wp-admin/x.php",
		}, rejected: []string{"4: invalid indicator"}},
		"empty list": {file: "empty.txt"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, src := serve(t, tc.file)
			var s vendortest.Recorder
			if _, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Since: time.Time{}}, &s); err != nil {
				t.Fatal(err)
			}
			if got := s.Values(ioc.URL); !slices.Equal(got, tc.want) {
				t.Errorf("values\n got %q\nwant %q", got, tc.want)
			}
			if len(s.Rejections) != len(tc.rejected) {
				t.Errorf("rejected %q, want %q", s.Rejections, tc.rejected)
			}
			for i, r := range s.Rejections {
				if i < len(tc.rejected) && !strings.HasPrefix(r, tc.rejected[i]) {
					t.Errorf("rejection %q, want %q…", r, tc.rejected[i])
				}
			}
			for _, ind := range s.Indicators {
				if ind.Kind != ioc.URL || ind.Score != 80 || !slices.Equal(ind.Tags, []string{"phishing"}) || ind.Source != "openphish" {
					t.Errorf("indicator %+v: want url, score 80, tag phishing, source openphish", ind)
				}
			}
			if !slices.Equal(s.Lists, []string{"openphish"}) {
				t.Errorf("lists complete %v, want [openphish]", s.Lists)
			}
		})
	}
}

// TestConditional: the second run sends the ETag back, gets 304 and says
// ErrUnchanged without reading or completing any list; a changed list is
// read again.
func TestConditional(t *testing.T) {
	srv, op, src := serve(t, "feed.txt")
	var s vendortest.Recorder
	cur, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Since: time.Time{}}, &s)
	if err != nil {
		t.Fatal(err)
	}
	var again vendortest.Recorder
	cur2, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: cur, Since: time.Time{}}, &again)
	if !errors.Is(err, ioc.ErrUnchanged) || cur2 != cur {
		t.Fatalf("unchanged list: %v, cursor %q, want ErrUnchanged and %q", err, cur2, cur)
	}
	if len(again.Indicators) != 0 || len(again.Lists) != 0 || op.Served() != 1 {
		t.Errorf("unchanged list: %d indicators, lists %v, served %d times", len(again.Indicators), again.Lists, op.Served())
	}
	reqs := srv.Requests()
	if got := reqs[len(reqs)-1].Header.Get("If-None-Match"); got == "" {
		t.Error("second request without If-None-Match")
	}
	op.Set("https://new.example.com/x\n")
	var changed vendortest.Recorder
	if _, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: cur, Since: time.Time{}}, &changed); err != nil {
		t.Fatal(err)
	}
	if got := changed.Values(ioc.URL); !slices.Equal(got, []string{"https://new.example.com/x"}) {
		t.Errorf("changed list: %q", got)
	}
}

func TestFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		status, times int
		retryAfter    string
		cut           bool
		want          ioc.FailureKind // "" for success
	}{
		"401":                   {status: 401, want: ioc.InvalidCredentials},
		"403":                   {status: 403, want: ioc.InvalidCredentials},
		"404":                   {status: 404, want: ioc.InvalidURL},
		"persistent 429":        {status: 429, retryAfter: "0", want: ioc.SurpassedQueryLimit},
		"429 too long to wait":  {status: 429, times: 1, retryAfter: "3600", want: ioc.SurpassedQueryLimit},
		"one 429 is waited out": {status: 429, times: 1, retryAfter: "0"},
		"one 503 is waited out": {status: 503, times: 1, retryAfter: "0"},
		"persistent 500":        {status: 500, want: ioc.FetchingDataError},
		// Issue 11: a connection made and then cut is a Connection Error.
		"body cut mid-way": {cut: true, want: ioc.ConnectionError},
	} {
		t.Run(name, func(t *testing.T) {
			_, op, src := serve(t, "feed.txt")
			if tc.status != 0 {
				op.Fail(tc.status, tc.times, tc.retryAfter)
			}
			op.SetCut(tc.cut)
			var s vendortest.Recorder
			_, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Since: time.Time{}}, &s)
			if tc.want == "" {
				if err != nil || len(s.Indicators) != 5 {
					t.Fatalf("got %v with %d indicators, want success with 5", err, len(s.Indicators))
				}
				return
			}
			if err == nil || ioc.FailureOf(err) != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
			if len(s.Lists) != 0 {
				t.Errorf("a failed read completed lists %v", s.Lists)
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	_, _, src := serve(t, "feed.txt")
	src.MaxBytes = 40
	var s vendortest.Recorder
	_, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Since: time.Time{}}, &s)
	if ioc.FailureOf(err) != ioc.FetchingDataError || !strings.Contains(err.Error(), "over its cap of 40 bytes") || len(s.Lists) != 0 {
		t.Fatalf("over the cap: %v, lists %v; want Fetching Data Error naming the cap and no list complete", err, s.Lists)
	}
}

// TestSinkFailure: an error of the sink (the run's limit, the store) ends
// the run as it is, neither classified as the vendor's fault nor completing
// the list.
func TestSinkFailure(t *testing.T) {
	_, _, src := serve(t, "feed.txt")
	stop := errors.New("the store is down")
	s := vendortest.Recorder{Fail: stop}
	_, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Since: time.Time{}}, &s)
	if err != stop || len(s.Lists) != 0 {
		t.Fatalf("sink failure: %v, lists %v; want the sink's error as it is and no list complete", err, s.Lists)
	}
}
