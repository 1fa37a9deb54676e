package ingest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
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

// A download's progress ends on its total: however fast the download, the
// last report (all of its bytes) is published, not only the first.
func TestDownloadProgressReachesItsTotal(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		body := strings.Repeat("# padding to pass the reader's 64 KiB step\n", 5000) + ipRows(1, 3) // about 220 KB
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write([]byte(body))
		}))
		defer srv.Close()
		h := newHarness(t, st, TSVOptions{})
		events, cancel := h.r.Bus().Subscribe(0)
		defer cancel()
		f, err := st.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: "fast",
			CollectionURL: srv.URL + "/feed.tsv", PollingFrequency: 4, RetentionPeriod: 30})
		if err != nil {
			t.Fatal(err)
		}
		run := h.runNow(f.ID)
		var last *Progress
		for more := true; more; {
			select {
			case ev := <-events:
				if p := ev.Progress; p != nil && p.RunID == run.ID && !p.Done && p.Downloaded > 0 {
					last = p
				}
			default:
				more = false
			}
		}
		if last == nil || last.Downloaded != int64(len(body)) || last.DownloadTotal != int64(len(body)) {
			t.Errorf("last download progress %+v, want %d of %d bytes", last, len(body), len(body))
		}
	})
}
