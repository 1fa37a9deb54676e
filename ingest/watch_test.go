package ingest_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// watchAll is an asset watch covering the domains it names; Sighted
// records, at each wake-up, the pending asset sightings committed by then.
type watchAll struct {
	st     *store.Store
	covers []string

	mu      sync.Mutex
	pending []int64
}

func (w *watchAll) Covers(kind ioc.Kind, value string) bool {
	return kind == ioc.Domain && slices.Contains(w.covers, value)
}

func (w *watchAll) Sighted() {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, _ := w.st.PendingAssetSightings(context.Background())
	w.pending = append(w.pending, n)
}

func pendingSightings(t *testing.T, s *store.Store) []store.PendingAssetSighting {
	t.Helper()
	var out []store.PendingAssetSighting
	if err := s.DB.NewSelect().Model(&out).Order("id").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// The indicators that cover an asset are written, as pending asset
// sightings, in their batch's own transaction, and the watch is woken once
// it committed; those a failed run's Settle dropped are never written.
func TestBatchSinkWritesWatchedIndicatorsWithTheirBatch(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := sinkFeed(t, s)
		now := time.Now().UTC().Truncate(time.Second)
		w := &watchAll{st: s, covers: []string{"h1.example", "h4.example"}}
		sink := ingest.NewBatchSink(s, feed, 0, ingest.BatchOptions{BatchSize: 3, Retention: time.Hour, Watch: w,
			Now: func() time.Time { return now }})
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
		got := pendingSightings(t, s)
		if len(got) != 1 {
			t.Fatalf("pending asset sightings = %+v, want h1.example only", got)
		}
		p := got[0]
		if p.FeedID != feed || p.Kind != "domain" || p.Value != "h1.example" || p.Score != 50 || len(p.Tags) != 1 ||
			p.At != now.UnixMicro() || p.ExpiresAt != now.Add(time.Hour).UnixMicro() {
			t.Fatalf("pending asset sighting = %+v", p)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.pending) != 1 || w.pending[0] != 1 {
			t.Fatalf("woken with %v pending, want once, after the batch committed its sighting", w.pending)
		}
	})
}

// A batch that fails writes no pending asset sighting: they commit with
// the batch or not at all.
func TestFailedBatchLeavesNoPendingAssetSightings(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := sinkFeed(t, s)
		if _, err := s.DB.ExecContext(ctx, "UPDATE feeds SET enabled = ? WHERE id = ?", false, feed); err != nil {
			t.Fatal(err)
		}
		w := &watchAll{st: s, covers: []string{"h1.example"}}
		sink := ingest.NewBatchSink(s, feed, 0, ingest.BatchOptions{BatchSize: 3, Retention: time.Hour, Watch: w})
		for i := range 2 {
			if err := sink.Indicator(ctx, domain(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.Flush(ctx); !errors.Is(err, store.ErrFeedDisabled) {
			t.Fatalf("Flush = %v, want ErrFeedDisabled", err)
		}
		if got := pendingSightings(t, s); len(got) != 0 || storedIoCs(t, s) != 0 {
			t.Fatalf("a failed batch left %d IoCs and pending asset sightings %+v", storedIoCs(t, s), got)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.pending) != 0 {
			t.Fatalf("woken after a failed batch: %v", w.pending)
		}
	})
}
