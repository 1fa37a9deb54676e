package ingest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// A run closed as an orphan keeps the counters it reached: what it read
// and rejected is saved with each batch, beside what it stored, so the
// counters are those of its last batch written.
func TestOrphanKeepsItsCounters(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, TSVOptions{})
		f, err := st.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: "orphan",
			CollectionURL: "http://127.0.0.1:1/feed.tsv", PollingFrequency: 4, RetentionPeriod: 30})
		if err != nil {
			t.Fatal(err)
		}
		// The run of an instance that died after writing a few batches.
		run, err := st.StartRun(ctx, f.ID, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		sink := NewBatchSink(st, f.ID, run.ID, BatchOptions{BatchSize: 4, Retention: 24 * time.Hour})
		for i := range 10 {
			if i%5 == 2 { // both before the last batch is full
				sink.Rejected(int64(i+1), "not an indicator")
				continue
			}
			if err := sink.Indicator(ctx, ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("198.18.0.%d", i+1),
				Source: "src", Score: 50}); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := h.r.closeOrphanedRuns(ctx); err != nil {
			t.Fatal(err)
		}
		var closed *store.FeedRun
		for _, r := range h.runs(f.ID) {
			if r.ID == run.ID {
				closed = &r
			}
		}
		if closed == nil || closed.EndedAt == nil || closed.ErrorKind != store.MessageStopped {
			t.Fatalf("the orphan after the pass: %+v", closed)
		}
		if closed.Fetched != 10 || closed.Stored != 8 || closed.Rejected != 2 {
			t.Errorf("the orphan's counters: fetched %d stored %d rejected %d, want 10, 8, 2",
				closed.Fetched, closed.Stored, closed.Rejected)
		}
	})
}
