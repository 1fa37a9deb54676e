package ingest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/events/eventstest"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// withAppName sets the application_name of a PostgreSQL DSN, so that a test
// can find (and terminate) the connections of one store.
func withAppName(dsn, name string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "application_name=" + name
}

// waitFor polls cond until it holds or a generous bound passes.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openGate closes gate unless it is closed already.
func openGate(gate chan struct{}) {
	select {
	case <-gate:
	default:
		close(gate)
	}
}

// Instance a is cut from the database in the middle of a run (its
// connections terminated, as when its process is killed): instance b finds
// the run's lock free and closes the run as Stopped, announces it, and takes
// the feed over. When a comes back to life, its run writes nothing more and
// its end changes nothing.
func TestOrphanedRunClosedBySurvivor(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	ctx := context.Background()
	stA, err := store.Open(ctx, withAppName(dsn, "tifeeds-test-a"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stA.Close() })
	stB, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stB.Close() })

	srv := newTSVServer(t, ipRows(1, 10))
	defer srv.Close()
	gate := make(chan struct{})
	defer openGate(gate)
	srv.set(func(s *tsvServer) { s.gate = gate })

	a := newHarnessWith(t, stA, tsv.Options{}, func(o *Options) { o.RecordRetry = 10 * time.Millisecond })
	b := newHarnessWith(t, stB, tsv.Options{}, func(o *Options) { o.OrphanInterval = 100 * time.Millisecond })
	evs, cancel := b.r.Bus().Subscribe(0)
	defer cancel()

	f := a.create(srv.URL+"/feed.tsv", nil) // a runs it at once, and waits at the gate
	waitFor(t, "a's request", 10*time.Second, func() bool { return srv.requests.Load() == 1 })
	runs, err := stB.UnfinishedRuns(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("open runs %+v, %v", runs, err)
	}
	orphan := runs[0]
	// b leaves a run that a holds alone.
	time.Sleep(300 * time.Millisecond)
	if run := b.lastRun(f.ID); run.ID != orphan.ID || run.EndedAt != nil {
		t.Fatalf("b closed a run going on: %+v", run)
	}

	var killed int
	if err := stB.DB.QueryRowContext(ctx, `SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'tifeeds-test-a'`).Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("terminated %d connections of a: %v", killed, err)
	}

	// b closes the run within a few of its passes, and says so.
	var stoppedEvent, doneEvent bool
	for deadline := time.After(10 * time.Second); !stoppedEvent || !doneEvent; {
		select {
		case ev := <-evs:
			if ev.Feed != nil && ev.FeedID == f.ID && ev.Feed.StatusMessage == store.MessageStopped {
				stoppedEvent = true
			}
			if p := ev.Progress; p != nil && p.RunID == orphan.ID && p.Done && p.ErrorKind == store.MessageStopped {
				doneEvent = true
			}
		case <-deadline:
			t.Fatalf("b announced the close: feed %v, run done %v", stoppedEvent, doneEvent)
		}
	}
	closed, err := stB.FeedRuns(ctx, f.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got *store.FeedRun
	for i := range closed {
		if closed[i].ID == orphan.ID {
			got = &closed[i]
		}
	}
	if got == nil || got.EndedAt == nil || got.ErrorKind != store.MessageStopped {
		t.Fatalf("the orphaned run after b's pass: %+v", got)
	}

	// b resumed the feed (its request waits at the gate too); a comes back.
	waitFor(t, "b's resumed request", 10*time.Second, func() bool { return srv.requests.Load() == 2 })
	openGate(gate)
	b.r.Wait()
	a.r.Wait()
	all, _ := stB.FeedRuns(ctx, f.ID, 10)
	if len(all) != 2 || all[0].ID == orphan.ID || all[0].ErrorKind != "" || all[0].Stored != 10 {
		t.Errorf("runs after b's resumed run: %+v", all)
	}
	if all[len(all)-1].ID != orphan.ID || all[len(all)-1].ErrorKind != store.MessageStopped || all[len(all)-1].Stored != 0 {
		t.Errorf("a's run after a came back: %+v", all[len(all)-1])
	}
	if got := b.feed(f.ID); got.StatusMessage != store.MessageSuccess || got.Cursor != "" {
		t.Errorf("feed after both runs: %q cursor %q", got.StatusMessage, got.Cursor)
	}
	checkConsistent(t, stB)
}

// An instance killed in a run restarts after another instance ran the feed
// to the end: closing its old run leaves the newer run's status, time and
// cursor, and the feed is not run again.
func TestRestartAfterNewerRun(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		srv := newTSVServer(t, ipRows(1, 5))
		defer srv.Close()
		f, err := st.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: "f",
			CollectionURL: srv.URL + "/feed.tsv", PollingFrequency: 4, RetentionPeriod: 30})
		if err != nil {
			t.Fatal(err)
		}
		// The killed instance's run: open, its cursor half-way.
		old, err := st.StartRun(ctx, f.ID, time.Now().Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		storetest.MustExec(t, st, "UPDATE feeds SET cursor = 'line:2' WHERE id = ?", f.ID)
		storetest.MustExec(t, st, "UPDATE feed_runs SET stored = 2, added = 2 WHERE id = ?", old.ID)
		// Another instance's newer run, to the end of the file.
		newer, err := st.StartRun(ctx, f.ID, time.Now().Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		storetest.MustExec(t, st, "UPDATE feeds SET cursor = '' WHERE id = ?", f.ID)
		newer.Fetched, newer.Stored, newer.Added = 5, 5, 3
		if _, err := st.FinishRun(ctx, newer, store.MessageSuccess); err != nil {
			t.Fatal(err)
		}
		want, err := st.Feed(ctx, f.ID)
		if err != nil {
			t.Fatal(err)
		}

		h := newHarness(t, st, tsv.Options{}) // the killed instance, restarted
		h.r.Wait()
		got := h.feed(f.ID)
		if got.StatusMessage != store.MessageSuccess || got.Cursor != "" || got.LastRunAt == nil ||
			!got.LastRunAt.Equal(*want.LastRunAt) {
			t.Errorf("feed after the restart: message %q cursor %q last run %v, want Success, no cursor, %v",
				got.StatusMessage, got.Cursor, got.LastRunAt, want.LastRunAt)
		}
		if n := srv.requests.Load(); n != 0 {
			t.Errorf("the restart ran the feed again (%d requests)", n)
		}
		runs, _ := st.FeedRuns(ctx, f.ID, 10)
		if len(runs) != 2 || runs[0].ID != newer.ID || runs[0].ErrorKind != "" ||
			runs[1].ID != old.ID || runs[1].EndedAt == nil || runs[1].ErrorKind != store.MessageStopped {
			t.Errorf("runs after the restart: %+v", runs)
		}
	})
}

// slowServer answers with the first part of its body at once and the rest
// once gate is closed (or the request is cancelled); started counts the
// requests that got the first part.
type slowServer struct {
	*httptest.Server
	mu      sync.Mutex
	started int
}

func newSlowServer(t *testing.T, first, rest string, gate chan struct{}) *slowServer {
	s := &slowServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		s.mu.Lock()
		s.started++
		s.mu.Unlock()
		select {
		case <-gate:
			io.WriteString(w, rest)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *slowServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// Disabling, resetting or deleting a feed through instance a stops its run
// on instance b at once, in the middle of its download, without waiting for
// b's reconcile pass or for the download to end.
func TestStopElsewhereAtOnce(t *testing.T) {
	tests := map[string]struct {
		premium bool
		act     func(ctx context.Context, a *feeds.Service, id int64) error
	}{
		"disable": {act: func(ctx context.Context, a *feeds.Service, id int64) error {
			_, err := a.SetEnabled(ctx, id, false, true)
			return err
		}},
		"delete": {act: func(ctx context.Context, a *feeds.Service, id int64) error {
			return a.DeleteFeed(ctx, id)
		}},
		"reset": {premium: true, act: func(ctx context.Context, a *feeds.Service, id int64) error {
			_, err := a.ResetPremiumFeed(ctx, id)
			return err
		}},
	}
	dsn := storetest.NewPostgresDSN(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ia, ib := eventstest.NewInstance(t, dsn), eventstest.NewInstance(t, dsn)
			a := newHarnessWith(t, ia.Store, tsv.Options{}, func(o *Options) { o.Bus = ia.Bus })
			b := newHarnessWith(t, ib.Store, tsv.Options{}, func(o *Options) { o.Bus = ib.Bus })
			gate := make(chan struct{})
			defer openGate(gate)
			var f *store.Feed
			if tc.premium {
				obj := func(i int) string { return fmt.Sprintf(`{"feed":"192.0.2.%d","feed_type":"ip"},`, i) }
				srv := newSlowServer(t, "["+obj(1), obj(2)+`{"feed":"192.0.2.3","feed_type":"ip"}]`, gate)
				a.reg.Register(premium.FeedListKind(premium.FeedListOptions{}))
				b.reg.Register(premium.FeedListKind(premium.FeedListOptions{}))
				var err error
				f, err = a.m.CreatePremiumFeed(ctx, feeds.PremiumFeedInput{Kind: premium.FeedList, Name: name,
					APIEndpoint: srv.URL + "/v2/x.json?key=k&v=2"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ia.Store.SetFeedEnabled(ctx, f.ID, true); err != nil { // enabled without a's running it
					t.Fatal(err)
				}
				if _, err := b.m.RunNow(ctx, f.ID); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "b's download", 10*time.Second, func() bool { return srv.requests() == 1 })
			} else {
				srv := newSlowServer(t, ipRows(1, 3), ipRows(4, 6), gate)
				var err error
				f, err = ib.Store.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: name,
					CollectionURL: srv.URL + "/feed.tsv", PollingFrequency: 4, RetentionPeriod: 30})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := b.m.RunNow(ctx, f.ID); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "b's download", 10*time.Second, func() bool { return srv.requests() == 1 })
			}
			if !b.r.Running(f.ID) {
				t.Fatal("b is not running the feed")
			}
			if err := tc.act(ctx, a.m, f.ID); err != nil {
				t.Fatal(err)
			}
			// About a second is the aim; the bound is generous for a loaded
			// machine, and far below b's reconcile interval (30 s). The
			// download never ends by itself: the gate stays shut.
			waitFor(t, "b's run stopping", 5*time.Second, func() bool { return !b.r.Running(f.ID) })
			if n := a.count("SELECT COUNT(*) FROM sightings WHERE feed_id = ?", f.ID); n != 0 {
				t.Errorf("%d sightings of the feed after the %s", n, name)
			}
			if name == "disable" {
				run := b.lastRun(f.ID)
				if run.EndedAt == nil || run.ErrorKind != store.MessageStopped {
					t.Errorf("b's run after the disable: %+v", run)
				}
				if got := b.feed(f.ID); got.Enabled || got.StatusMessage != store.MessageDisabled {
					t.Errorf("feed after the disable: %+v", got)
				}
			}
		})
	}
}

// A run publishes its download's progress, bytes read of how many, while
// the download goes on, before anything is parsed.
func TestDownloadProgress(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		gate := make(chan struct{})
		defer openGate(gate)
		first := strings.Repeat("# padding to pass the reader's 64 KiB step\n", 2000) // about 88 KB
		srv := newSlowServer(t, first, ipRows(1, 3), gate)
		h := newHarness(t, st, tsv.Options{})
		evs, cancel := h.r.Bus().Subscribe(0)
		defer cancel()
		f, err := st.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: "slow",
			CollectionURL: srv.URL + "/feed.tsv", PollingFrequency: 4, RetentionPeriod: 30})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.m.RunNow(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
		var got *events.Progress
		for deadline := time.After(10 * time.Second); got == nil; {
			select {
			case ev := <-evs:
				if p := ev.Progress; p != nil && p.FeedID == f.ID && p.Downloaded > 0 {
					got = p
				}
			case <-deadline:
				t.Fatal("no download progress while the download waits")
			}
		}
		if got.Done || got.Downloaded <= 0 || got.Downloaded > int64(len(first)) || got.DownloadTotal != -1 || got.Fetched != 0 {
			t.Errorf("progress during the download: %+v (first part %d bytes, length not sent)", got, len(first))
		}
		openGate(gate)
		h.r.Wait()
		if run := h.lastRun(f.ID); run.ErrorKind != "" || run.Stored != 3 {
			t.Errorf("run after the download: %+v", run)
		}
	})
}
