package ingest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// BenchmarkTSVFeedRun measures a whole TSV run through the runner (HTTP
// download, parse, batched writes, run record) of 200,000 new rows.
func BenchmarkTSVFeedRun(b *testing.B) {
	const rows = 200000
	body := bigRows(rows)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	for _, dialect := range []string{"sqlite", "postgres"} {
		b.Run(dialect, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				var st *store.Store
				if dialect == "sqlite" {
					st = storetest.NewSQLite(b)
				} else {
					st = storetest.NewPostgres(b)
				}
				reg := NewRegistryWithClient(loopbackClient)
				reg.Register(tsv.Kind(tsv.Options{DailyLimit: 10 * rows, TempDir: b.TempDir()}))
				r, err := New(Options{Store: st, Secrets: testSecrets(b), Sources: reg,
					Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					b.Fatal(err)
				}
				f, err := st.CreateCustomFeed(context.Background(), store.NewCustomFeed{Category: store.CategoryTSV,
					Name: "bench", CollectionURL: srv.URL, PollingFrequency: 24, RetentionPeriod: 30})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				r.startRun(context.Background(), f.ID, runRequest{why: runAsked, wait: true})
				b.StopTimer()
				if run, err := st.LastRun(context.Background(), f.ID); err != nil || run.Stored != rows {
					b.Fatalf("run = %+v, %v", run, err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
