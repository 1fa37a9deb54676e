package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestTSVFeedRuns(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st, tsv.Options{})
		srv := newTSVServer(t, "ip\t192.0.2.1\tsrc\t90\n"+"ip\t999.0.0.1\tsrc\t90\n"+"domain\tEvil.Example.\tsrc-2\t70\n"+
			"sha256-hash\t"+strings.Repeat("A", 64)+"\tsrc\t100\n"+"url\thttp://x/\tbad source!\t10\n")
		srv.set(func(s *tsvServer) { s.user, s.pass = "alice", "s3cret" })
		events, cancel := h.r.Bus().Subscribe(0)
		defer cancel()
		f := h.create(srv.URL+"/feed.tsv", func(in *feeds.CustomFeedInput) { in.Username, in.Password = "alice", "s3cret" })
		if f.Name != "TSV_feed" || !f.HasSecret() || strings.Contains(string(f.Secret), "s3cret") {
			t.Fatalf("created = %+v", f)
		}
		h.r.Wait()
		run := h.lastRun(f.ID)
		if run.ErrorKind != "" || run.Fetched != 5 || run.Stored != 3 || run.Rejected != 2 || run.EndedAt == nil ||
			len(run.Rejections) != 2 || run.Rejections[0].Position != 2 || run.Rejections[1].Position != 5 {
			t.Errorf("first run = %+v", run)
		}
		got := h.feed(f.ID)
		if got.StatusMessage != store.MessageSuccess || got.DerivedStatus() != store.StatusSuccess ||
			got.LastIngestion == nil || got.Cursor != "" {
			t.Errorf("after the first run: %+v", got)
		}
		if n := h.count(`SELECT COUNT(*) FROM iocs WHERE CAST(tags AS TEXT) LIKE '%emerging_threat%'`); n != 3 {
			t.Errorf("%d IoCs tagged emerging_threat, want 3", n)
		}
		if n := h.count(`SELECT COUNT(*) FROM iocs WHERE value = 'evil.example'`); n != 1 {
			t.Error("domain not normalised")
		}
		// The bus saw Initializing, then Success, and a final progress event.
		var msgs []string
		var done bool
	drain:
		for {
			select {
			case ev := <-events:
				// Consecutive events with the same message (last ingestion
				// moving during the run) count once.
				if ev.Feed != nil && (len(msgs) == 0 || msgs[len(msgs)-1] != ev.Feed.StatusMessage) {
					msgs = append(msgs, ev.Feed.StatusMessage)
				}
				if ev.Progress != nil && ev.Progress.Done && ev.Progress.Stored == 3 {
					done = true
				}
			default:
				break drain
			}
		}
		if strings.Join(msgs, ",") != "Initializing,Success" || !done {
			t.Errorf("events: messages %v, done %v", msgs, done)
		}

		// Initializing only on the first run.
		events2, cancel2 := h.r.Bus().Subscribe(f.ID)
		defer cancel2()
		run2 := h.runNow(f.ID)
		if run2.ID == run.ID || run2.Stored != 3 || run2.ErrorKind != "" {
			t.Errorf("second run = %+v", run2)
		}
		for len(events2) > 0 {
			if ev := <-events2; ev.Feed != nil && ev.Feed.StatusMessage == store.MessageInitializing {
				t.Error("Initializing shown on a second run")
			}
		}
		checkConsistent(t, st)
	})
}

func TestTSVStatusMessages(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st, tsv.Options{MaxBytes: 2000, Timeout: 500 * time.Millisecond})
		srv := newTSVServer(t, ipRows(1, 5))
		refused := func() string {
			l, _ := net.Listen("tcp", "127.0.0.1:0")
			defer l.Close()
			return "http://" + l.Addr().String() + "/feed.tsv"
		}()
		big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, ipRows(1, 200)) // over MaxBytes
		}))
		defer big.Close()
		broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100000")
			io.WriteString(w, ipRows(1, 3))
		}))
		defer broken.Close()
		cases := map[string]struct {
			url, user, pass string
			want            ioc.FailureKind
		}{
			"wrong password": {srv.URL + "/feed.tsv", "alice", "wrong", ioc.InvalidCredentials},
			"no such file":   {srv.URL + "/missing.tsv", "alice", "right", ioc.InvalidURL},
			"refused":        {refused, "", "", ioc.FailedToConnect},
			"unknown host":   {"http://no-such-host.invalid/feed.tsv", "", "", ioc.FailedToConnect},
			"broken body":    {broken.URL, "", "", ioc.FetchingDataError}, // declared over MaxBytes
			"too large":      {big.URL, "", "", ioc.FetchingDataError},
		}
		srv.set(func(s *tsvServer) { s.user, s.pass = "alice", "right" })
		i := 0
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				i++
				f := h.create(tc.url, func(in *feeds.CustomFeedInput) {
					in.Name = fmt.Sprintf("f%d", i)
					in.Username, in.Password = tc.user, tc.pass
				})
				h.r.Wait()
				got := h.feed(f.ID)
				run := h.lastRun(f.ID)
				if got.StatusMessage != string(tc.want) || got.DerivedStatus() != store.StatusError ||
					run.ErrorKind != string(tc.want) || run.ErrorDetail == "" || run.Stored != 0 {
					t.Errorf("feed %q %s, run %+v; want %s", got.StatusMessage, got.DerivedStatus(), run, tc.want)
				}
				if n := h.count(`SELECT COUNT(*) FROM sightings WHERE feed_id = ?`, f.ID); n != 0 {
					t.Errorf("a failed run stored %d sightings", n)
				}
			})
		}
		// The message clears with the next good run.
		f := h.create(srv.URL+"/feed.tsv", func(in *feeds.CustomFeedInput) { in.Name = "fixable"; in.Username = "alice" })
		h.r.Wait()
		if got := h.feed(f.ID); got.StatusMessage != string(ioc.InvalidCredentials) {
			t.Fatalf("no password: %q", got.StatusMessage)
		}
		pw := "right"
		if _, err := h.m.UpdateFeed(context.Background(), f.ID, feeds.FeedUpdate{Password: &pw}); err != nil {
			t.Fatal(err)
		}
		// Saving the password runs the feed at once.
		h.r.Wait()
		if run := h.lastRun(f.ID); run.ErrorKind != "" || run.Stored != 5 {
			t.Errorf("after fixing the password: %+v", run)
		}
		if got := h.feed(f.ID); got.StatusMessage != store.MessageSuccess {
			t.Errorf("after fixing the password: %q", got.StatusMessage)
		}
	})
}

func TestTSVDailyLimit(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st, tsv.Options{DailyLimit: 5})
		// Line 3 is bad, so lines and IoCs differ.
		srv := newTSVServer(t, ipRows(1, 2)+"bad line\n"+ipRows(3, 11))
		f := h.create(srv.URL+"/feed.tsv", nil)
		h.r.Wait()
		check := func(step string, stored, added int64, cursor string, limited bool, total int) {
			t.Helper()
			run := h.lastRun(f.ID)
			if run.Stored != stored || run.Added != added || run.ErrorKind != "" || strings.Contains(run.Note, "daily limit of 5 IoCs reached") != limited {
				t.Errorf("%s: run = %+v", step, run)
			}
			got := h.feed(f.ID)
			if got.Cursor != cursor || got.StatusMessage != store.MessageSuccess {
				t.Errorf("%s: cursor %q message %q, want cursor %q", step, got.Cursor, got.StatusMessage, cursor)
			}
			if n := h.count(`SELECT COUNT(*) FROM sightings WHERE feed_id = ?`, f.ID); n != total {
				t.Errorf("%s: %d sightings, want %d", step, n, total)
			}
		}
		check("day 1", 5, 5, "line:6", true, 5)
		h.runNow(f.ID)
		check("day 1 again", 0, 0, "line:6", true, 5)
		h.clock.Add(24 * time.Hour)
		h.runNow(f.ID)
		// The source reads chunks of 2 lines; the rest of the chunk that
		// used the limit up (line 11) is read again by the next run.
		check("day 2", 5, 5, "line:10", true, 10)
		h.clock.Add(24 * time.Hour)
		h.runNow(f.ID)
		check("day 3", 2, 1, "", false, 11)
		// A new pass from the top re-reports what the feed has: it is
		// stored (its expiry moves on) and costs none of today's limit.
		h.runNow(f.ID)
		check("day 3, new pass", 11, 0, "", false, 11)
		srv.set(func(s *tsvServer) { s.body = ipRows(1, 11) + ipRows(20, 30) })
		h.runNow(f.ID)
		check("day 3, 11 new IoCs", 15, 4, "line:14", true, 15)
		checkConsistent(t, st)

		// A new collection URL is checked, and forgets the cursor into the old file.
		bad, good := "ftp://x/feed.tsv", srv.URL+"/feed.tsv?v=2"
		var ve *store.ValidationError
		if _, err := h.m.UpdateFeed(context.Background(), f.ID, feeds.FeedUpdate{CollectionURL: &bad}); !errors.As(err, &ve) || ve.Field != "collectionUrl" {
			t.Errorf("update to %s: %v", bad, err)
		}
		if got := h.feed(f.ID); got.Cursor != "line:14" || got.CollectionURL == bad {
			t.Errorf("refused update changed the feed: %+v", got)
		}
		if got, err := h.m.UpdateFeed(context.Background(), f.ID, feeds.FeedUpdate{CollectionURL: &good}); err != nil || got.Cursor != "" || got.CollectionURL != good {
			t.Errorf("after a new URL: %+v, %v", got, err)
		}
	})
}

func TestDisableEnable(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		srv := newTSVServer(t, ipRows(1, 4))
		f := h.create(srv.URL+"/feed.tsv", nil)
		h.r.Wait()

		if _, err := h.m.SetEnabled(ctx, f.ID, false, false); err == nil || !strings.Contains(err.Error(), "confirm") {
			t.Fatalf("disable without confirm: %v", err)
		}
		if !h.feed(f.ID).Enabled {
			t.Fatal("disabled without confirmation")
		}

		// A run in flight is cancelled by disabling.
		gate, started := make(chan struct{}), make(chan struct{}, 1)
		srv.set(func(s *tsvServer) { s.gate, s.started = gate, started; s.body = ipRows(1, 8) })
		defer close(gate)
		h.m.RunNow(ctx, f.ID)
		<-started
		got, err := h.m.SetEnabled(ctx, f.ID, false, true)
		if err != nil || got.Enabled || got.StatusMessage != store.MessageDisabled || got.DerivedStatus() != store.StatusDisabled {
			t.Fatalf("disabled = %+v, %v", got, err)
		}
		if h.r.Running(f.ID) {
			t.Error("run still going after disabling")
		}
		run := h.lastRun(f.ID)
		if run.ErrorKind != store.MessageStopped || run.EndedAt == nil || !strings.Contains(run.Note, "disabled") {
			t.Errorf("cancelled run = %+v", run)
		}
		if n := h.count(`SELECT COUNT(*) FROM sightings WHERE feed_id = ?`, f.ID); n != 4 {
			t.Errorf("%d sightings after the cancelled run, want the first run's 4", n)
		}
		if _, ok := h.r.NextRun(f.ID); ok {
			t.Error("a disabled feed is still scheduled")
		}
		if _, err := h.m.RunNow(ctx, f.ID); err == nil {
			t.Error("ran a disabled feed")
		}

		// Enabling fetches at once what was missed.
		srv.set(func(s *tsvServer) { s.gate, s.started = nil, nil })
		got, err = h.m.SetEnabled(ctx, f.ID, true, false)
		if err != nil || !got.Enabled {
			t.Fatalf("enable: %+v %v", got, err)
		}
		h.r.Wait()
		if run := h.lastRun(f.ID); run.ErrorKind != "" || run.Stored != 8 {
			t.Errorf("run on enabling = %+v", run)
		}
		if got := h.feed(f.ID); got.StatusMessage != store.MessageSuccess {
			t.Errorf("message after enabling = %q", got.StatusMessage)
		}
		if _, ok := h.r.NextRun(f.ID); !ok {
			t.Error("the enabled feed is not scheduled")
		}
	})
}

// A source of the TAXII category that records what it is asked, to check
// the backfill bound the runner passes.
func TestBackfillBound(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		var (
			mu   sync.Mutex
			reqs []source.Request
		)
		h.reg.Register(source.Kind{Key: store.CategoryTAXII, New: func(source.Env) source.Source {
			return source.Func(func(ctx context.Context, req source.Request, sink source.Sink) error {
				mu.Lock()
				reqs = append(reqs, req)
				mu.Unlock()
				if err := sink.Indicator(ctx, ioc.Indicator{Kind: ioc.IP, Value: "198.18.9.9", Source: "s", Score: 1}); err != nil {
					return err
				}
				return sink.Checkpoint(ctx, "2026-01-02T00:00:00Z")
			})
		}})
		f := h.create("https://taxii.example/api/collections/c1/", func(in *feeds.CustomFeedInput) {
			in.Category, in.BackfillDays = store.CategoryTAXII, 7
		})
		h.r.Wait()
		h.m.SetEnabled(ctx, f.ID, false, true)
		h.clock.Add(3 * 24 * time.Hour)
		h.m.SetEnabled(ctx, f.ID, true, false)
		h.r.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(reqs) != 2 {
			t.Fatalf("requests = %+v", reqs)
		}
		want := h.clock.Now().AddDate(0, 0, -7)
		if !reqs[1].Since.Equal(want) || reqs[1].Cursor != "2026-01-02T00:00:00Z" || reqs[0].Cursor != "" {
			t.Errorf("on re-enabling: %+v, want since %v and the first run's cursor", reqs[1], want)
		}
		if got := h.feed(f.ID); got.Cursor != "2026-01-02T00:00:00Z" {
			t.Errorf("cursor = %q", got.Cursor)
		}
	})
}

func TestNoConcurrentRuns(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		srv := newTSVServer(t, ipRows(1, 3))
		f := h.create(srv.URL+"/feed.tsv", nil)
		h.r.Wait()
		gate, started := make(chan struct{}), make(chan struct{}, 10)
		srv.set(func(s *tsvServer) { s.gate, s.started = gate, started })
		before := srv.requests.Load()
		h.m.RunNow(ctx, f.ID)
		<-started
		for range 3 {
			if _, err := h.m.RunNow(ctx, f.ID); !errors.Is(err, feeds.ErrAlreadyRunning) {
				t.Fatalf("run now on a running feed: %v, want feeds.ErrAlreadyRunning", err)
			}
		}
		h.r.startRun(ctx, f.ID, runRequest{why: runScheduled, wait: true}) // the scheduled job firing meanwhile
		if st.Dialect == store.Postgres {
			// Another instance on the same database does not run it either.
			other, err := New(Options{Store: st, Secrets: testSecrets(t), Sources: h.reg,
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			other.startRun(ctx, f.ID, runRequest{why: runAsked, wait: true})
		}
		close(gate)
		h.r.Wait()
		if n := srv.requests.Load() - before; n != 1 {
			t.Errorf("%d fetches, want 1", n)
		}
		runs, _ := st.FeedRuns(ctx, f.ID, 10)
		if len(runs) != 2 {
			t.Errorf("%d runs, want 2", len(runs))
		}
	})
}

func TestReschedule(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		srv := newTSVServer(t, ipRows(1, 3))
		f := h.create(srv.URL+"/feed.tsv", nil)
		h.r.Wait()
		next, ok := h.r.NextRun(f.ID)
		if !ok || next.Sub(h.clock.Now()) < 3*time.Hour || next.Sub(h.clock.Now()) > 4*time.Hour+time.Minute {
			t.Fatalf("next run %v (now %v), want in about 4 h", next, h.clock.Now())
		}
		hours := 12
		if _, err := h.m.UpdateFeed(ctx, f.ID, feeds.FeedUpdate{PollingFrequency: &hours}); err != nil {
			t.Fatal(err)
		}
		next, ok = h.r.NextRun(f.ID)
		if last := h.feed(f.ID).LastRunAt; !ok || next.Sub(*last) < 12*time.Hour-time.Minute || next.Sub(*last) > 12*time.Hour+time.Minute {
			t.Errorf("next run %v after last %v, want 12 h after", next, last)
		}
		// Built-in feeds run every 24 h whatever they say.
		b := &store.Feed{Name: "OTX", Type: store.FeedBuiltin, Kind: "none", Category: "builtin", Enabled: true, RetentionPeriod: 30}
		if err := st.CreateFeed(ctx, b); err != nil {
			t.Fatal(err)
		}
		if got := h.r.interval(b); got != 24*time.Hour {
			t.Errorf("built-in interval %v", got)
		}
		if _, err := h.m.UpdateFeed(ctx, b.ID, feeds.FeedUpdate{PollingFrequency: &hours}); err == nil {
			t.Error("a built-in feed was edited")
		}
	})
}

func TestExpiryAndDelete(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		a := newTSVServer(t, ipRows(1, 4))
		b := newTSVServer(t, ipRows(3, 6))
		fa := h.create(a.URL+"/feed.tsv", func(in *feeds.CustomFeedInput) { in.Name, in.RetentionPeriod = "a", 1 })
		fb := h.create(b.URL+"/feed.tsv", func(in *feeds.CustomFeedInput) { in.Name, in.RetentionPeriod = "b", 10 })
		h.r.Wait()
		if n := h.count(`SELECT COUNT(*) FROM iocs`); n != 6 {
			t.Fatalf("%d IoCs, want 6", n)
		}
		// Two days on, feed a's sightings (retention 1 day) expire: IoCs 1-2 go,
		// 3-4 stay through feed b.
		h.clock.Add(48 * time.Hour)
		h.r.sweep(ctx)
		if n := h.count(`SELECT COUNT(*) FROM iocs`); n != 4 {
			t.Errorf("after the sweep %d IoCs, want 4", n)
		}
		if n := h.count(`SELECT COUNT(*) FROM sightings WHERE feed_id = ?`, fa.ID); n != 0 {
			t.Errorf("%d expired sightings left", n)
		}
		checkConsistent(t, st)

		// Deleting b removes its sightings and its IoCs.
		h.runNow(fa.ID)
		if err := h.m.DeleteFeed(ctx, fb.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Feed(ctx, fb.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted feed still there: %v", err)
		}
		if n := h.count(`SELECT COUNT(*) FROM iocs`); n != 4 {
			t.Errorf("after deleting b %d IoCs, want feed a's 4", n)
		}
		if n := h.count(`SELECT COUNT(*) FROM feed_runs WHERE feed_id = ?`, fb.ID); n != 0 {
			t.Errorf("%d runs of the deleted feed left", n)
		}
		if _, ok := h.r.NextRun(fb.ID); ok {
			t.Error("deleted feed still scheduled")
		}
		checkConsistent(t, st)
	})
}

func TestStopAtSafePointAndResume(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{ChunkLines: 50})
		srv := newTSVServer(t, ipRows(1, 3000))
		events, cancel := h.r.Bus().Subscribe(0)
		defer cancel()
		f := h.create(srv.URL+"/feed.tsv", nil)
		for ev := range events {
			if ev.Progress != nil && ev.Progress.Stored > 0 {
				break
			}
		}
		if err := h.r.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		run := h.lastRun(f.ID)
		got := h.feed(f.ID)
		stored := h.count(`SELECT COUNT(*) FROM sightings WHERE feed_id = ?`, f.ID)
		if run.ErrorKind != store.MessageStopped || got.StatusMessage != store.MessageStopped ||
			got.DerivedStatus() != store.StatusError || run.Stored != int64(stored) {
			t.Errorf("stopped run %+v, feed %q, %d sightings", run, got.StatusMessage, stored)
		}
		// Stopped at a checkpoint: the cursor is the line of the last stored row.
		if got.Cursor != fmt.Sprintf("line:%d", stored) || stored == 3000 {
			t.Errorf("cursor %q with %d sightings stored", got.Cursor, stored)
		}
		checkConsistent(t, st)

		// A new runner resumes at once from the cursor and completes.
		h2 := newHarness(t, st, tsv.Options{ChunkLines: 500})
		h2.r.Wait()
		run2 := h2.lastRun(f.ID)
		if run2.ErrorKind != "" || run2.Stored != int64(3000-stored) {
			t.Errorf("resumed run = %+v, want %d stored", run2, 3000-stored)
		}
		if n := h.count(`SELECT COUNT(*) FROM iocs`); n != 3000 {
			t.Errorf("%d IoCs after resuming, want 3000", n)
		}
		checkConsistent(t, st)
	})
}

// TestRunNowAsTheRunEnds: between the commit of a run's end and the
// runner letting go of the feed, the feed shows idle to everyone; a Run
// now then is queued and runs once the feed is free, neither refused nor
// lost.
func TestRunNowAsTheRunEnds(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		srv := newTSVServer(t, ipRows(1, 3))
		f := h.create(srv.URL+"/feed.tsv", nil)
		h.r.Wait()
		before := len(h.runs(f.ID))

		// A run held by the runner, its end not yet committed.
		h.r.mu.Lock()
		runCtx, ar := h.r.claimLocked(f.ID)
		h.r.mu.Unlock()
		if _, err := h.m.RunNow(ctx, f.ID); !errors.Is(err, feeds.ErrAlreadyRunning) {
			t.Fatalf("run now while running: %v, want feeds.ErrAlreadyRunning", err)
		}
		// Its end committed: Run now is taken.
		h.r.markEnded(f.ID)
		if _, err := h.m.RunNow(ctx, f.ID); err != nil {
			t.Fatalf("run now once the run's end is committed: %v", err)
		}
		// The held run goes through, lets go of the feed, and the queued
		// run follows.
		h.r.wg.Add(1)
		go func() {
			defer h.r.wg.Done()
			h.r.runClaimed(runCtx, f.ID, ar, runAsked, nil)
		}()
		h.r.Wait()
		if n := len(h.runs(f.ID)) - before; n != 2 {
			t.Errorf("%d runs after the held one ended, want it and the queued one", n)
		}
	})
}

// The runner's key indexer brings the key tables up to a run's IoCs once
// writes are quiet: the keyed orders then read them through the keys.
func TestRunnerIndexesKeysWhenQuiet(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		h := newHarnessWith(t, st, tsv.Options{}, func(o *Options) { o.KeyIndexInterval = 20 * time.Millisecond })
		srv := newTSVServer(t, ipRows(1, 9))
		f := h.create(srv.URL+"/feed.tsv", nil)
		h.r.Wait()
		if run := h.lastRun(f.ID); run.Stored != 9 {
			t.Fatalf("run = %+v", run)
		}
		deadline := time.Now().Add(20 * time.Second)
		for h.count(`SELECT count(*) FROM ioc_keys_state k, ioc_stats s
WHERE k.stamp < s.stamp OR k.value_id < (SELECT max(id) FROM iocs)`) > 0 {
			if time.Now().After(deadline) {
				t.Fatal("the key tables never caught up")
			}
			time.Sleep(20 * time.Millisecond)
		}
		// A value key for each IoC, and on SQLite four orders' keys
		// (PostgreSQL's indexes on iocs serve the orders).
		tables := []string{"ioc_value_keys"}
		if st.Dialect == store.SQLite {
			tables = append(tables, "ioc_score_keys", "ioc_first_seen_keys", "ioc_last_seen_keys", "ioc_expires_keys")
		}
		for _, table := range tables {
			held := " k JOIN iocs i ON i.id = k.id AND i.changed_at = k.stamp"
			if table == "ioc_value_keys" {
				held = "" // a value key holds while its IoC is there
			}
			if n := h.count("SELECT count(*) FROM " + table + held); n != 9 {
				t.Errorf("%d keys hold in %s, want 9", n, table)
			}
		}
	})
}

// The batches of a run keep the key tables within the store's lag limit
// from the runner's start, before its key indexer first ticks: a run that
// began with the service wrote 120,000 IoCs without keys in the second
// before that tick, and pages fell back to plain queries.
func TestRunsPayTheKeysDebtBeforeTheIndexerTicks(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		const limit, batch = 5, 3
		st.KeyLagLimit = limit
		h := newHarnessWith(t, st, tsv.Options{}, func(o *Options) { o.KeyIndexInterval = time.Hour })
		srv := newTSVServer(t, ipRows(1, 40))
		f := h.create(srv.URL+"/feed.tsv", nil)
		h.r.Wait()
		if run := h.lastRun(f.ID); run.Stored != 40 {
			t.Fatalf("run = %+v", run)
		}
		changed := h.count(`SELECT count(*) FROM iocs WHERE changed_at > (SELECT stamp FROM ioc_keys_state)`)
		unvalued := h.count(`SELECT count(*) FROM iocs WHERE id > (SELECT value_id FROM ioc_keys_state)`)
		if changed > limit+batch || unvalued > limit+batch {
			t.Errorf("after a run of 40 IoCs in batches of %d the keys lag by %d changes and %d values, want at most %d",
				batch, changed, unvalued, limit+batch)
		}
	})
}
