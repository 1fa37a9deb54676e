package taxii

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

const benchIndicators, benchPage = 100_000, 1000

// countSink counts and drops: it measures the client, not a store.
type countSink struct {
	source.SinkBase
	n, rejected int64
}

func (s *countSink) Indicator(context.Context, ioc.Indicator) error { s.n++; return nil }
func (s *countSink) Rejected(int64, string)                         { s.rejected++ }
func (s *countSink) Checkpoint(context.Context, string) error       { return nil }

// BenchmarkFetch fetches, decodes and extracts a 100,000-indicator
// collection in pages of 1,000 from a loopback server.
func BenchmarkFetch(b *testing.B) {
	s := newServer(b, benchIndicators)
	c := &Client{Username: testUser, Password: testSecret, PageSize: benchPage}
	b.ResetTimer()
	start := time.Now()
	var total int64
	for b.Loop() {
		sink := &countSink{}
		if _, err := c.Fetch(context.Background(), s.CollectionURL(collID), "", sink); err != nil {
			b.Fatal(err)
		}
		if sink.n != benchIndicators {
			b.Fatalf("fetched %d indicators, want %d", sink.n, benchIndicators)
		}
		total += sink.n
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "indicators/s")
}

// BenchmarkFetchRaw is the baseline of BenchmarkFetch: the same pages
// fetched and decoded into generic JSON, with no STIX parsing.
func BenchmarkFetchRaw(b *testing.B) {
	s := newServer(b, benchIndicators)
	hc := &http.Client{}
	b.ResetTimer()
	start := time.Now()
	var total int64
	for b.Loop() {
		next := ""
		for {
			q := url.Values{"limit": {strconv.Itoa(benchPage)}}
			if next != "" {
				q.Set("next", next)
			}
			req, _ := http.NewRequest(http.MethodGet, s.CollectionURL(collID)+"objects/?"+q.Encode(), nil)
			req.Header.Set("Accept", MediaType)
			req.SetBasicAuth(testUser, testSecret)
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var env struct {
				More    bool              `json:"more"`
				Next    string            `json:"next"`
				Objects []json.RawMessage `json:"objects"`
			}
			err = json.NewDecoder(resp.Body).Decode(&env)
			resp.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			total += int64(len(env.Objects))
			if !env.More {
				break
			}
			next = env.Next
		}
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "indicators/s")
}
