package vendortest_test

import (
	"context"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/premium/falcon"
	"github.com/tifeeds/tifeeds/ingest/premium/gti"
	"github.com/tifeeds/tifeeds/ingest/premium/risklist"
	"github.com/tifeeds/tifeeds/ingest/premium/threatstream"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/source/sourcetest"
	"github.com/tifeeds/tifeeds/ioc"
)

// TestGeneratedVolumes reads each generated vendor volume through the
// kind's real source: every generated indicator arrives once, none is
// rejected, over several pages where the vendor pages.
func TestGeneratedVolumes(t *testing.T) {
	now := time.Now()
	const n = 2500
	cases := map[string]struct {
		host  string
		vend  http.Handler
		fetch func(ctx context.Context, client *http.Client, base string, sink *vendortest.Recorder) (string, error)
		want  int
	}{
		"threatstream": {
			host: threatstream.Host,
			vend: &vendortest.ThreatStream{Username: "u", Key: "k", Generated: n,
				Generate: func(i int) []byte { return vendortest.ThreatStreamObject(i, now.Add(-time.Hour)) }},
			fetch: func(ctx context.Context, c *http.Client, _ string, sink *vendortest.Recorder) (string, error) {
				return sourcetest.Fetch(ctx, &threatstream.Source{Settings: feedhttp.Settings{Client: c}}, source.Request{Feed: source.Feed{Username: "u", Password: "k"}}, sink)
			},
			want: n,
		},
		"falcon": {
			host: falcon.Host,
			vend: &vendortest.Falcon{ClientID: "id", Secret: "s", Generated: n,
				Generate: func(i int) []byte { return vendortest.FalconIndicator(i, now.Add(-time.Hour)) }},
			fetch: func(ctx context.Context, c *http.Client, _ string, sink *vendortest.Recorder) (string, error) {
				return sourcetest.Fetch(ctx, &falcon.Source{Settings: feedhttp.Settings{Client: c}}, source.Request{Feed: source.Feed{Username: "id", Password: "s"}}, sink)
			},
			want: n,
		},
		"gti": {
			host: gti.Host,
			vend: func() http.Handler {
				g := vendortest.NewGTI("k")
				last := now.UTC().Truncate(time.Hour).Add(-time.Hour).Format("2006010215")
				g.Generate = func(list, hour string) io.WriterTo {
					if hour != last {
						return nil
					}
					for i, l := range gti.Lists {
						if l == list {
							return vendortest.GTIPackage(i*n, n)
						}
					}
					return nil
				}
				return g
			}(),
			fetch: func(ctx context.Context, c *http.Client, _ string, sink *vendortest.Recorder) (string, error) {
				return sourcetest.Fetch(ctx, &gti.Source{Settings: feedhttp.Settings{Client: c}, Grace: time.Nanosecond}, source.Request{Since: now.Add(-3 * time.Hour), Feed: source.Feed{Password: "k"}}, sink)
			},
			want: n * len(gti.Lists),
		},
		"risklist": {
			host: risklist.Host,
			vend: func() http.Handler {
				rf := vendortest.NewRecordedFuture("k")
				for _, l := range risklist.Lists {
					gz, err := vendortest.GzipRiskList(l, n)
					if err != nil {
						t.Fatal(err)
					}
					rf.SetGzipList(l, gz)
				}
				return rf
			}(),
			fetch: func(ctx context.Context, c *http.Client, _ string, sink *vendortest.Recorder) (string, error) {
				return sourcetest.Fetch(ctx, &risklist.Source{Settings: feedhttp.Settings{Client: c}}, source.Request{Feed: source.Feed{Password: "k"}}, sink)
			},
			want: n * len(risklist.Lists),
		},
		"socradar": {
			host: vendortest.SOCRadarHost,
			vend: &vendortest.SOCRadar{Key: "k", Generate: map[string]func(io.Writer) error{
				"bench": func(w io.Writer) error { return vendortest.WriteSOCRadarDocument(w, 0, n) }}},
			fetch: func(ctx context.Context, _ *http.Client, base string, sink *vendortest.Recorder) (string, error) {
				s := &premium.FeedListSource{Settings: feedhttp.Settings{Client: http.DefaultClient}}
				return sourcetest.Fetch(ctx, s, source.Request{Started: now,
					Feed: source.Feed{URL: vendortest.SOCRadarEndpoint(base+"/"+vendortest.SOCRadarHost, "bench", "k")}}, sink)
			},
			want: n,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			srv := vendortest.New(t)
			srv.Handle(c.host, c.vend)
			sink := &vendortest.Recorder{}
			if _, err := c.fetch(context.Background(), vendortest.MirrorClient(srv.URL), srv.URL, sink); err != nil {
				t.Fatal(err)
			}
			seen := map[ioc.Kind]map[string]bool{}
			for _, ind := range sink.Indicators {
				if seen[ind.Kind] == nil {
					seen[ind.Kind] = map[string]bool{}
				}
				if seen[ind.Kind][ind.Value] {
					t.Fatalf("%s %s handed over twice", ind.Kind, ind.Value)
				}
				seen[ind.Kind][ind.Value] = true
			}
			if len(sink.Indicators) != c.want || len(sink.Rejections) > 0 {
				t.Fatalf("%d indicators, %d rejected (first %q); want %d", len(sink.Indicators), len(sink.Rejections),
					append(sink.Rejections, "")[0], c.want)
			}
			if name != "socradar" && name != "risklist" && len(srv.Requests()) < 3 {
				t.Errorf("%d requests: want several pages", len(srv.Requests()))
			}
		})
	}
}
