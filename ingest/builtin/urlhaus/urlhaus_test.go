package urlhaus

import (
	"bytes"
	"context"
	"errors"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ioc"
)

func checkRejected(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("rejected %q, want %q", got, want)
	}
	for i, r := range got {
		if !strings.HasPrefix(r, want[i]) {
			t.Errorf("rejection %d is %q, want %q…", i, r, want[i])
		}
	}
}

func TestParseURLhaus(t *testing.T) {
	all := []ioc.Indicator{
		{Kind: ioc.URL, Value: "http://203.0.113.87:54591/i", Source: ListURLhaus, Score: ScoreOnline,
			Tags: []string{"malware_download", "32-bit", "elf", "mips", "mozi"}},
		{Kind: ioc.URL, Value: "https://cdn.example.com/update/Invoice,2026.zip", Source: ListURLhaus, Score: ScoreOnline,
			Tags: []string{"malware_download", "zip", "asyncrat"}},
		{Kind: ioc.URL, Value: "http://fingerprint-veri.example.net/", Source: ListURLhaus, Score: ScoreOffline,
			Tags: []string{"malware_download", "clickfix"}},
		{Kind: ioc.URL, Value: "http://[2001:db8::20]:8080/bins/arm7", Source: ListURLhaus, Score: ScoreOffline,
			Tags: []string{"malware_download"}},
	}
	for name, tc := range map[string]struct {
		after    state
		since    time.Time
		want     []ioc.Indicator
		rejected []string
		next     state
	}{
		"first run, # header, quoted tags with commas, an added column": {
			want:     all,
			rejected: []string{"13: invalid indicator", `14: dateadded "yesterday" is not a date`},
			next:     state{Added: "2026-11-02 12:01:07", IDs: []string{"3990005", "3990004"}},
		},
		"first run bounded by the backfill window": {
			since:    time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
			want:     all[:3],
			rejected: []string{"13: invalid indicator", `14: dateadded "yesterday" is not a date`},
			next:     state{Added: "2026-11-02 12:01:07", IDs: []string{"3990005", "3990004"}},
		},
		"rows newer than the cursor": {
			after:    state{Added: "2026-11-02 11:40:00", IDs: []string{"3990003"}},
			want:     all[:2],
			rejected: []string{`14: dateadded "yesterday" is not a date`},
			next:     state{Added: "2026-11-02 12:01:07", IDs: []string{"3990005", "3990004"}},
		},
		"a new row in the cursor's second": {
			after:    state{Added: "2026-11-02 12:01:07", IDs: []string{"3990005"}},
			want:     all[1:2],
			rejected: []string{`14: dateadded "yesterday" is not a date`},
			next:     state{Added: "2026-11-02 12:01:07", IDs: []string{"3990005", "3990004"}},
		},
		"nothing new": {
			after:    state{Added: "2026-11-02 12:01:07", IDs: []string{"3990005", "3990004"}},
			rejected: []string{`14: dateadded "yesterday" is not a date`},
			next:     state{Added: "2026-11-02 12:01:07", IDs: []string{"3990005", "3990004"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var rec vendortest.Recorder
			next, err := parseURLhaus(context.Background(), bytes.NewReader(vendortest.Testdata(t, "csv_recent.csv")), tc.after, tc.since, &rec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rec.Indicators, tc.want) {
				t.Errorf("indicators\n got %+v\nwant %+v", rec.Indicators, tc.want)
			}
			checkRejected(t, rec.Rejections, tc.rejected)
			if !reflect.DeepEqual(next, tc.next) {
				t.Errorf("state %+v, want %+v", next, tc.next)
			}
			for _, ind := range rec.Indicators {
				if strings.Contains(ind.Value, "urlhaus.abuse.ch") {
					t.Errorf("urlhaus_link became an indicator: %s", ind.Value)
				}
			}
		})
	}
}

func TestParseSSLBL(t *testing.T) {
	cert := func(v, tag string) ioc.Indicator {
		return ioc.Indicator{Kind: ioc.CertSHA1, Value: v, Source: ListSSLBL, Score: ScoreCert, Tags: []string{tag}}
	}
	for name, tc := range map[string]struct {
		file     string
		want     []ioc.Indicator
		rejected []string
		err      string
	}{
		"# header, reasons, a short hash, an unquoted comma": {
			file: "sslblacklist.csv",
			want: []ioc.Indicator{
				cert("4da14224452c1fe61f46b1112c43ecfd9f322c82", "rhadamanthys"),
				cert("b785d1a9e5784703b98a96698ad05dff5e07229a", "dcrat"),
				cert("6bef207908bfad6b19580067ce770bc820d3d2ef", "cobaltstrike"),
				cert("0d6b2e9a53fd4c2f3f6b1e5b2d6e0c1a7f8e9d01", "cobalt strike"),
			},
			rejected: []string{"13: invalid indicator: cert_sha1 must be 40 hex digits"},
		},
		"no SHA1 column":           {file: "sslbl-no-sha1.csv", err: "no header naming the columns sha1"},
		"the URLhaus list instead": {file: "csv_recent.csv", err: "no header naming the columns sha1"},
	} {
		t.Run(name, func(t *testing.T) {
			var rec vendortest.Recorder
			err := ParseSSLBL(context.Background(), bytes.NewReader(vendortest.Testdata(t, tc.file)), &rec)
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
			checkRejected(t, rec.Rejections, tc.rejected)
		})
	}
}

func newSource(srv *vendortest.Server) *Source {
	return &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), RetryBackoff: time.Millisecond, MaxRetryWait: time.Second}}
}

func TestFetch(t *testing.T) {
	const key = "abusech-test-auth-key"
	for name, tc := range map[string]struct {
		key          string
		urlhaus      *vendortest.AbuseCh
		sslbl        *vendortest.AbuseCh
		cursor       string
		urls, certs  int
		lists        []string
		kind         ioc.FailureKind
		unchanged    bool
		detail       string
		urlhausTries int
	}{
		"both lists, keyless": {
			urls: 4, certs: 4, lists: []string{ListSSLBL}, urlhausTries: 1,
		},
		"both lists with the Auth-Key": {
			key: key, urlhaus: &vendortest.AbuseCh{AuthKey: key}, sslbl: &vendortest.AbuseCh{AuthKey: key},
			urls: 4, certs: 4, lists: []string{ListSSLBL}, urlhausTries: 1,
		},
		"no Auth-Key where abuse.ch wants one": {
			urlhaus: &vendortest.AbuseCh{AuthKey: key}, sslbl: &vendortest.AbuseCh{AuthKey: key},
			kind: ioc.InvalidCredentials, detail: "set --abusech-auth-key (TIFEEDS_ABUSECH_AUTH_KEY)", urlhausTries: 1,
		},
		"a refused Auth-Key": {
			key: "wrong-" + key, urlhaus: &vendortest.AbuseCh{AuthKey: key}, sslbl: &vendortest.AbuseCh{AuthKey: key},
			kind: ioc.InvalidCredentials, detail: "refused the Auth-Key", urlhausTries: 1,
		},
		"SSLBL fails: URLhaus is still read, SSLBL not completed": {
			sslbl: &vendortest.AbuseCh{FileFaults: vendortest.FileFaults{Status: 500}},
			urls:  4, kind: ioc.FetchingDataError, detail: "sslbl: the server answered 500", urlhausTries: 1,
		},
		"URLhaus fails: SSLBL is still read and completed": {
			urlhaus: &vendortest.AbuseCh{FileFaults: vendortest.FileFaults{Status: 402}},
			certs:   4, lists: []string{ListSSLBL}, kind: ioc.SurpassedQueryLimit, detail: "urlhaus: the server answered 402", urlhausTries: 1,
		},
		"SSLBL cut mid-way": {
			sslbl: &vendortest.AbuseCh{FileFaults: vendortest.FileFaults{CutAt: 700}},
			urls:  4, certs: -1, kind: ioc.ConnectionError, urlhausTries: 1,
		},
		"one 429 with Retry-After is waited out": {
			urlhaus: &vendortest.AbuseCh{FileFaults: vendortest.FileFaults{Status: 429, StatusTimes: 1, RetryAfter: "0"}},
			urls:    4, certs: 4, lists: []string{ListSSLBL}, urlhausTries: 2,
		},
		"a persistent 503": {
			urlhaus: &vendortest.AbuseCh{FileFaults: vendortest.FileFaults{Status: 503}},
			certs:   4, lists: []string{ListSSLBL}, kind: ioc.FetchingDataError, urlhausTries: 1 + DefaultMaxRetries,
		},
		"both unchanged": {
			urlhaus: &vendortest.AbuseCh{ETag: `"u1"`}, sslbl: &vendortest.AbuseCh{ETag: `"s1"`},
			cursor:    `{"added":"2026-11-02 12:01:07","ids":["3990005","3990004"],"urlhaus":{"etag":"\"u1\""},"sslbl":{"etag":"\"s1\""}}`,
			unchanged: true, urlhausTries: 1,
		},
		"SSLBL unchanged, URLhaus has new rows": {
			urlhaus: &vendortest.AbuseCh{ETag: `"u2"`}, sslbl: &vendortest.AbuseCh{ETag: `"s1"`},
			cursor: `{"added":"2026-11-02 11:40:00","ids":["3990003"],"urlhaus":{"etag":"\"u1\""},"sslbl":{"etag":"\"s1\""}}`,
			urls:   2, urlhausTries: 1,
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := vendortest.New(t)
			u, sl := tc.urlhaus, tc.sslbl
			if u == nil {
				u = &vendortest.AbuseCh{}
			}
			if sl == nil {
				sl = &vendortest.AbuseCh{}
			}
			u.Path, u.Body = vendortest.URLhausPath, vendortest.Testdata(t, "csv_recent.csv")
			sl.Path, sl.Body = vendortest.SSLBLPath, vendortest.Testdata(t, "sslblacklist.csv")
			srv.Handle(vendortest.URLhausHost, u)
			srv.Handle(vendortest.SSLBLHost, sl)
			var rec vendortest.Recorder
			cursor, err := newSource(srv).fetch(context.Background(), source.Request{Cursor: tc.cursor, Feed: source.Feed{Key: tc.key}}, &rec)
			switch {
			case tc.unchanged:
				if !errors.Is(err, ioc.ErrUnchanged) {
					t.Fatalf("error %v, want ErrUnchanged", err)
				}
			case tc.kind != "":
				if err == nil || ioc.FailureOf(err) != tc.kind {
					t.Fatalf("error %v, want %s", err, tc.kind)
				}
				if !strings.Contains(err.Error(), tc.detail) {
					t.Errorf("error %q does not say %q", err, tc.detail)
				}
			case err != nil:
				t.Fatal(err)
			}
			if err != nil && strings.Contains(err.Error(), key) {
				t.Errorf("the error quotes the key: %v", err)
			}
			if n := len(rec.Values(ioc.URL)); n != tc.urls {
				t.Errorf("%d URLs, want %d", n, tc.urls)
			}
			if n := len(rec.Values(ioc.CertSHA1)); tc.certs >= 0 && n != tc.certs {
				t.Errorf("%d certificates, want %d", n, tc.certs)
			}
			if !reflect.DeepEqual(rec.Lists, tc.lists) {
				t.Errorf("lists completed %q, want %q", rec.Lists, tc.lists)
			}
			if tc.urls > 0 {
				// The URLhaus rows are checkpointed with what they moved
				// the cursor to, whatever SSLBL does after.
				if len(rec.Checkpoints) == 0 || !strings.Contains(rec.Checkpoints[0], `"added":"2026-11-02 12:01:07"`) {
					t.Errorf("checkpoints %q, want the URLhaus rows' first", rec.Checkpoints)
				}
				if !strings.Contains(cursor, `"added":"2026-11-02 12:01:07"`) {
					t.Errorf("cursor %q", cursor)
				}
			}
			if n := u.Requests(); n != tc.urlhausTries {
				t.Errorf("%d URLhaus requests, want %d", n, tc.urlhausTries)
			}
			for _, r := range srv.Requests() {
				if got := r.Header.Get("Auth-Key"); got != tc.key {
					t.Errorf("%s%s: Auth-Key %q, want %q", r.Host, r.URL.Path, got, tc.key)
				}
			}
		})
	}
}

// A second run over the same files adds no URL again; the certificates,
// a snapshot, are read and completed again.
func TestFetchAgainAddsNoURL(t *testing.T) {
	srv := vendortest.New(t)
	srv.Handle(vendortest.URLhausHost, vendortest.NewURLhaus(vendortest.Testdata(t, "csv_recent.csv")))
	srv.Handle(vendortest.SSLBLHost, vendortest.NewSSLBL(vendortest.Testdata(t, "sslblacklist.csv")))
	s := newSource(srv)
	var first vendortest.Recorder
	cursor, err := s.fetch(context.Background(), source.Request{}, &first)
	if err != nil || len(first.Values(ioc.URL)) != 4 {
		t.Fatalf("first run: %v, %d URLs", err, len(first.Values(ioc.URL)))
	}
	var second vendortest.Recorder
	if _, err := s.fetch(context.Background(), source.Request{Cursor: cursor}, &second); err != nil {
		t.Fatal(err)
	}
	if urls := second.Values(ioc.URL); len(urls) != 0 {
		t.Errorf("the second run read again %q", urls)
	}
	if len(second.Values(ioc.CertSHA1)) != 4 || !reflect.DeepEqual(second.Lists, []string{ListSSLBL}) {
		t.Errorf("second run: %d certificates, lists %q", len(second.Values(ioc.CertSHA1)), second.Lists)
	}
}
