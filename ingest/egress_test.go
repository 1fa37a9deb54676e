package ingest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestEgressPolicyStatus: under the default policy a feed pointing at
// loopback, or at an IPv6 address that reaches it, shows Invalid URL with a detail naming the address and the
// setting, and the server is never reached; a URL with user information
// stored before the policy is refused at fetch time; query tokens are
// masked in run details.
func TestEgressPolicyStatus(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		h := newHarnessWith(t, st, tsv.Options{}, func(o *Options) {
			o.Sources = NewRegistry(RegistryOptions{Client: egress.NewClient(egress.Options{})})
			o.Sources.Register(tsv.Kind(tsv.Options{TempDir: t.TempDir(), ChunkLines: 2}))
		})
		srv := newTSVServer(t, ipRows(1, 5))
		refused := func() string {
			l, _ := net.Listen("tcp", "127.0.0.1:0")
			defer l.Close()
			return "http://" + l.Addr().String()
		}()
		_, srvPort, _ := net.SplitHostPort(srv.Listener.Addr().String())
		ctx := context.Background()
		for name, tc := range map[string]struct {
			url     string
			stored  bool // stored directly, past the validation of create
			kind    ioc.FailureKind
			want    []string
			secrets []string
		}{
			"loopback refused": {url: srv.URL + "/feed.tsv?key=s3cret", kind: ioc.InvalidURL,
				want: []string{"127.0.0.1", egress.Setting, "key=***"}, secrets: []string{"s3cret"}},
			"NAT64 loopback refused": {url: "http://[64:ff9b::7f00:1]:" + srvPort + "/feed.tsv", kind: ioc.InvalidURL,
				want: []string{"64:ff9b::7f00:1", "NAT64", "127.0.0.1", egress.Setting}},
			"user info at fetch": {url: strings.Replace(srv.URL, "//", "//alice:pw-s3cret@", 1) + "/feed.tsv", stored: true,
				kind: ioc.InvalidURL, want: []string{"user information"}, secrets: []string{"pw-s3cret", "alice"}},
		} {
			t.Run(name, func(t *testing.T) {
				var f *store.Feed
				if tc.stored {
					var err error
					f, err = st.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: name,
						CollectionURL: tc.url, PollingFrequency: 4, RetentionPeriod: 30})
					if err != nil {
						t.Fatal(err)
					}
				} else {
					f = h.create(tc.url, func(in *feeds.CustomFeedInput) { in.Name = name })
					h.r.Wait()
				}
				run := h.runNow(f.ID)
				got := h.feed(f.ID)
				if got.StatusMessage != string(tc.kind) || run.ErrorKind != string(tc.kind) {
					t.Fatalf("feed %q, run %q %q; want %s", got.StatusMessage, run.ErrorKind, run.ErrorDetail, tc.kind)
				}
				for _, w := range tc.want {
					if !strings.Contains(run.ErrorDetail, w) {
						t.Errorf("detail %q does not say %q", run.ErrorDetail, w)
					}
				}
				for _, s := range tc.secrets {
					if strings.Contains(run.ErrorDetail, s) {
						t.Errorf("detail %q shows %q", run.ErrorDetail, s)
					}
				}
			})
		}
		if n := srv.requests.Load(); n != 0 {
			t.Errorf("the loopback server was reached %d times", n)
		}

		// Allowed, but nothing listens: the token is masked in the detail.
		allowed := newHarness(t, st, tsv.Options{})
		f := allowed.create(refused+"/feed.tsv?token=t0ken-s3cret&v=2", func(in *feeds.CustomFeedInput) { in.Name = "masked" })
		allowed.r.Wait()
		run := allowed.lastRun(f.ID)
		if run.ErrorKind != string(ioc.FailedToConnect) || strings.Contains(run.ErrorDetail, "t0ken-s3cret") ||
			!strings.Contains(run.ErrorDetail, "token=***&v=***") {
			t.Errorf("run %q %q; want Failed to connect with the token masked", run.ErrorKind, run.ErrorDetail)
		}
	})
}

// TestRunDetailMasksURLs: whatever error a source returns, the URLs it
// quotes are masked in the run's detail.
func TestRunDetailMasksURLs(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st, tsv.Options{})
		h.reg.Register(source.Kind{Key: store.CategoryTSV, New: func(source.Env) source.Source {
			return source.Func(func(_ context.Context, req source.Request, _ source.Sink) error {
				return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("x: %w", errors.New("bad answer from "+req.Feed.URL)))
			})
		}})
		f := h.create("https://feeds.example/a.tsv?apikey=k3y-s3cret", nil)
		h.r.Wait()
		run := h.lastRun(f.ID)
		if strings.Contains(run.ErrorDetail, "k3y-s3cret") || !strings.Contains(run.ErrorDetail, "apikey=***") {
			t.Fatalf("detail %q", run.ErrorDetail)
		}
	})
}
