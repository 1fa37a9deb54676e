package openphish_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/openphish"
	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ioc"
)

// sink records what a source hands over.
type sink struct {
	inds     []ioc.Indicator
	rejected []int64
	lists    []string
}

func (s *sink) Indicator(_ context.Context, ind ioc.Indicator) error {
	s.inds = append(s.inds, ind)
	return nil
}
func (s *sink) Rejected(pos int64, _ string)             { s.rejected = append(s.rejected, pos) }
func (s *sink) Checkpoint(context.Context, string) error { return nil }
func (s *sink) ListComplete(source string)               { s.lists = append(s.lists, source) }
func (s *sink) values() []string {
	var out []string
	for _, i := range s.inds {
		out = append(out, i.Value)
	}
	return out
}

func serve(t *testing.T, file string) (*vendortest.Server, *vendortest.OpenPhish, *openphish.Source) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	srv := vendortest.New(t)
	op := &vendortest.OpenPhish{}
	op.Set(string(b))
	srv.Handle(vendortest.OpenPhishHost, op)
	return srv, op, &openphish.Source{Client: vendortest.MirrorClient(srv.URL), MaxRetryWait: 50 * time.Millisecond}
}

func TestParse(t *testing.T) {
	for name, tc := range map[string]struct {
		file     string
		want     []string
		rejected []int64
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
		}, rejected: []int64{4}},
		"empty list": {file: "empty.txt"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, src := serve(t, tc.file)
			var s sink
			if _, err := src.Fetch(context.Background(), "", time.Time{}, &s); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.values(), tc.want) {
				t.Errorf("values\n got %q\nwant %q", s.values(), tc.want)
			}
			if !slices.Equal(s.rejected, tc.rejected) {
				t.Errorf("rejected lines %v, want %v", s.rejected, tc.rejected)
			}
			for _, ind := range s.inds {
				if ind.Kind != ioc.URL || ind.Score != 80 || !slices.Equal(ind.Tags, []string{"phishing"}) || ind.Source != "openphish" {
					t.Errorf("indicator %+v: want url, score 80, tag phishing, source openphish", ind)
				}
			}
			if !slices.Equal(s.lists, []string{"openphish"}) {
				t.Errorf("lists complete %v, want [openphish]", s.lists)
			}
		})
	}
}

// TestConditional: the second run sends the ETag back, gets 304 and says
// ErrUnchanged without reading or completing any list; a changed list is
// read again.
func TestConditional(t *testing.T) {
	srv, op, src := serve(t, "feed.txt")
	var s sink
	cur, err := src.Fetch(context.Background(), "", time.Time{}, &s)
	if err != nil {
		t.Fatal(err)
	}
	var again sink
	cur2, err := src.Fetch(context.Background(), cur, time.Time{}, &again)
	if !errors.Is(err, ioc.ErrUnchanged) || cur2 != cur {
		t.Fatalf("unchanged list: %v, cursor %q, want ErrUnchanged and %q", err, cur2, cur)
	}
	if len(again.inds) != 0 || len(again.lists) != 0 || op.Served() != 1 {
		t.Errorf("unchanged list: %d indicators, lists %v, served %d times", len(again.inds), again.lists, op.Served())
	}
	reqs := srv.Requests()
	if got := reqs[len(reqs)-1].Header.Get("If-None-Match"); got == "" {
		t.Error("second request without If-None-Match")
	}
	op.Set("https://new.example.com/x\n")
	var changed sink
	if _, err := src.Fetch(context.Background(), cur, time.Time{}, &changed); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changed.values(), []string{"https://new.example.com/x"}) {
		t.Errorf("changed list: %q", changed.values())
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
		"body cut mid-way":      {cut: true, want: ioc.FetchingDataError},
	} {
		t.Run(name, func(t *testing.T) {
			_, op, src := serve(t, "feed.txt")
			if tc.status != 0 {
				op.Fail(tc.status, tc.times, tc.retryAfter)
			}
			op.SetCut(tc.cut)
			var s sink
			_, err := src.Fetch(context.Background(), "", time.Time{}, &s)
			if tc.want == "" {
				if err != nil || len(s.inds) != 5 {
					t.Fatalf("got %v with %d indicators, want success with 5", err, len(s.inds))
				}
				return
			}
			if err == nil || ioc.FailureOf(err) != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
			if len(s.lists) != 0 {
				t.Errorf("a failed read completed lists %v", s.lists)
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	_, _, src := serve(t, "feed.txt")
	src.MaxBytes = 40
	var s sink
	_, err := src.Fetch(context.Background(), "", time.Time{}, &s)
	if ioc.FailureOf(err) != ioc.FetchingDataError || len(s.lists) != 0 {
		t.Fatalf("over the cap: %v, lists %v; want Fetching Data Error and no list complete", err, s.lists)
	}
}
