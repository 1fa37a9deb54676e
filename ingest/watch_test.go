package ingest_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// watchAll is an asset watch covering the domains it names; Sighted
// records what it was handed and whether each was stored by then.
type watchAll struct {
	st     *store.Store
	covers []string

	mu      sync.Mutex
	sighted []string
	stored  []bool
}

func (w *watchAll) Covers(kind ioc.Kind, value string) bool {
	return kind == ioc.Domain && slices.Contains(w.covers, value)
}

func (w *watchAll) Sighted(_ int64, _ time.Time, _ time.Duration, inds []ioc.Indicator) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ind := range inds {
		n, _ := w.st.DB.NewSelect().Table("iocs").Where("value = ?", ind.Value).Count(context.Background())
		w.sighted = append(w.sighted, ind.Value)
		w.stored = append(w.stored, n == 1)
	}
}

// The sink hands the asset watch the indicators that cover an asset once
// their batch committed, and never those a failed run's Settle dropped.
func TestBatchSinkHandsWatchedIndicatorsAfterCommit(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := sinkFeed(t, s)
		w := &watchAll{st: s, covers: []string{"h1.example", "h4.example"}}
		sink := ingest.NewBatchSink(s, feed, 0, ingest.BatchOptions{BatchSize: 3, Retention: time.Hour, Watch: w})
		steps := []func() error{
			func() error { return sink.Indicator(ctx, domain(0)) },
			func() error { return sink.Indicator(ctx, domain(1)) },
			func() error { return sink.Checkpoint(ctx, "line:2") },
			func() error { return sink.Indicator(ctx, domain(2)) }, // a full batch
			func() error { return sink.Checkpoint(ctx, "line:3") },
			func() error { return sink.Indicator(ctx, domain(3)) },
			func() error { return sink.Indicator(ctx, domain(4)) }, // after the last checkpoint
		}
		for i, step := range steps {
			if err := step(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if err := sink.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if strings.Join(w.sighted, ",") != "h1.example" || !w.stored[0] {
			t.Fatalf("sighted %v (stored %v), want h1.example only, stored before", w.sighted, w.stored)
		}
	})
}
