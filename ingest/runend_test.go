package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/events/eventstest"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// errorLog is a slog handler that keeps the messages logged at ERROR, for
// tests of what an expected situation must not log as one.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelError }
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler               { return l }
func (l *errorLog) WithGroup(string) slog.Handler                    { return l }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}

func (l *errorLog) logged() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// runEnd waits on an instance's events for the final progress event of
// run, skipping the others, and then makes sure no progress of that run
// follows it for a while: a subscriber repeats a run's counters until it
// sees that event.
func runEnd(t *testing.T, name string, evs <-chan events.Event, runID int64) *events.Progress {
	t.Helper()
	var done *events.Progress
	for deadline := time.After(eventstest.DeliveryWait); done == nil; {
		select {
		case ev := <-evs:
			if p := ev.Progress; p != nil && p.RunID == runID && p.Done {
				done = p
			}
		case <-deadline:
			t.Fatalf("%s: no final progress event of run %d", name, runID)
		}
	}
	for quiet := time.After(1500 * time.Millisecond); ; {
		select {
		case ev := <-evs:
			if p := ev.Progress; p != nil && p.RunID == runID {
				t.Errorf("%s: progress of run %d after its end: %+v", name, runID, p)
			}
		case <-quiet:
			return done
		}
	}
}

// A feed deleted through instance a while instance b runs it: b's run is
// cancelled, and every subscriber on both instances is told that the run
// ended, once. Nothing of it is logged as an error: a deletion mid-run is
// expected. The deletion races with b's end of run (b may record it before
// the feed is gone, or find the feed gone), so it is tried a few times.
func TestDeleteElsewhereEndsTheRunEverywhere(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	ctx := context.Background()
	ia, ib := eventstest.NewInstance(t, dsn), eventstest.NewInstance(t, dsn)
	logA, logB := &errorLog{}, &errorLog{}
	a := newHarnessWith(t, ia.Store, tsv.Options{}, func(o *Options) { o.Bus, o.Log = ia.Bus, slog.New(logA) })
	b := newHarnessWith(t, ib.Store, tsv.Options{}, func(o *Options) { o.Bus, o.Log = ib.Bus, slog.New(logB) })
	for try := range 4 {
		gate := make(chan struct{})
		srv := newSlowServer(t, ipRows(1, 3), ipRows(4, 6), gate)
		f, err := ib.Store.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: "del" + strconv.Itoa(try),
			CollectionURL: srv.URL + "/feed.tsv", PollingFrequency: 4, RetentionPeriod: 30})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.m.RunNow(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "b's download", 10*time.Second, func() bool { return srv.requests() == 1 })
		run := b.lastRun(f.ID)
		if err := a.m.DeleteFeed(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "b's run stopping", 5*time.Second, func() bool { return !b.r.Running(f.ID) })
		for name, in := range map[string]*eventstest.Instance{"a": ia, "b": ib} {
			p := runEnd(t, fmt.Sprintf("try %d, instance %s", try, name), in.Events, run.ID)
			if p.ErrorKind != store.MessageStopped || p.FeedID != f.ID {
				t.Errorf("try %d, instance %s: the run's end %+v, want Stopped", try, name, p)
			}
		}
		close(gate)
	}
	for name, l := range map[string]*errorLog{"a": logA, "b": logB} {
		if msgs := l.logged(); len(msgs) > 0 {
			t.Errorf("instance %s logged errors for expected situations: %q", name, msgs)
		}
	}
}

// Run now asked of two instances at the same moment starts one run: one
// answers with the feed, the other feeds.ErrAlreadyRunning (GraphQL CONFLICT),
// never both a success for the one run that starts.
func TestConcurrentRunNowStartsOneRun(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	ctx := context.Background()
	ia, ib := eventstest.NewInstance(t, dsn), eventstest.NewInstance(t, dsn)
	a := newHarnessWith(t, ia.Store, tsv.Options{}, func(o *Options) { o.Bus = ia.Bus })
	b := newHarnessWith(t, ib.Store, tsv.Options{}, func(o *Options) { o.Bus = ib.Bus })
	for try := range 5 {
		gate := make(chan struct{})
		srv := newSlowServer(t, ipRows(1, 3), ipRows(4, 6), gate)
		f, err := ia.Store.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: "now" + strconv.Itoa(try),
			CollectionURL: srv.URL + "/feed.tsv", PollingFrequency: 4, RetentionPeriod: 30})
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, m := range []*feeds.Service{a.m, b.m} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = m.RunNow(ctx, f.ID)
			}()
		}
		close(start)
		wg.Wait()
		started := 0
		for _, err := range errs {
			switch {
			case err == nil:
				started++
			case !errors.Is(err, feeds.ErrAlreadyRunning):
				t.Fatalf("try %d: run now: %v", try, err)
			}
		}
		if started != 1 {
			t.Errorf("try %d: %d of the two asks answered that they started the run (%v), want 1", try, started, errs)
		}
		waitFor(t, "the run's download", 10*time.Second, func() bool { return srv.requests() >= 1 })
		close(gate)
		a.r.Wait()
		b.r.Wait()
		if n := srv.requests(); n != 1 {
			t.Errorf("try %d: %d downloads, want 1", try, n)
		}
		if runs := a.runs(f.ID); len(runs) != 1 || runs[0].EndedAt == nil || runs[0].ErrorKind != "" {
			t.Errorf("try %d: runs %+v, want one, successful", try, runs)
		}
	}
}

// A run closed as an orphan keeps the counters it reached: what it read
// and rejected is saved with each batch, beside what it stored, so the
// counters are those of its last batch written.
func TestOrphanKeepsItsCounters(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
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
		h := newHarness(t, st, tsv.Options{})
		evs, cancel := h.r.Bus().Subscribe(0)
		defer cancel()
		f, err := st.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: "fast",
			CollectionURL: srv.URL + "/feed.tsv", PollingFrequency: 4, RetentionPeriod: 30})
		if err != nil {
			t.Fatal(err)
		}
		run := h.runNow(f.ID)
		var last *events.Progress
		for more := true; more; {
			select {
			case ev := <-evs:
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
