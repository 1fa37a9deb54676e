package ingest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// scheduledJob is a feed's job as the scheduler has it.
type scheduledJob struct {
	id    uuid.UUID
	every time.Duration // between its next two runs
	next  time.Time
}

// scheduledJobs returns the runner's feed jobs by feed id, read from the
// scheduler itself, and fails the test if they disagree with r.jobs.
func scheduledJobs(t *testing.T, r *Runner) map[int64]scheduledJob {
	t.Helper()
	got := map[int64]scheduledJob{}
	for _, j := range r.sched.Jobs() {
		name, ok := strings.CutPrefix(j.Name(), "feed:")
		if !ok {
			continue
		}
		id, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			t.Fatalf("job name %q: %v", j.Name(), err)
		}
		if _, dup := got[id]; dup {
			t.Errorf("feed %d has two jobs", id)
		}
		runs, err := j.NextRuns(2)
		if err != nil || len(runs) != 2 {
			t.Fatalf("next runs of %s: %v, %v", j.Name(), runs, err)
		}
		got[id] = scheduledJob{id: j.ID(), every: runs[1].Sub(runs[0]), next: runs[0]}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.jobs) != len(got) {
		t.Errorf("runner knows %d feed jobs, the scheduler has %d", len(r.jobs), len(got))
	}
	for id, fj := range r.jobs {
		if sj, ok := got[id]; !ok || sj.id != fj.id || sj.every != fj.every {
			t.Errorf("feed %d: runner has job %v every %v, scheduler %+v", id, fj.id, fj.every, sj)
		}
	}
	return got
}

// A feed changed through one runner is (re)scheduled on another runner on
// the same database by its reconcile pass, without that runner running it.
func TestReconcileFollowsOtherInstance(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a := newHarness(t, st, tsv.Options{})
		b := newHarness(t, st, tsv.Options{})
		srv := newTSVServer(t, ipRows(1, 3))
		keep := a.create(srv.URL+"/feed.tsv", func(in *feeds.CustomFeedInput) { in.Name = "keep" })
		f := a.create(srv.URL+"/feed.tsv?f", func(in *feeds.CustomFeedInput) { in.Name = "changed" })
		a.r.Wait()

		// reconcile runs b's pass and checks b's jobs against want (feed
		// id -> interval), each due one interval after the feed's last run.
		reconcile := func(step string, want map[int64]time.Duration) map[int64]scheduledJob {
			t.Helper()
			requests := srv.requests.Load()
			if err := b.r.reconcile(ctx); err != nil {
				t.Fatalf("%s: reconcile: %v", step, err)
			}
			got := scheduledJobs(t, b.r)
			if len(got) != len(want) {
				t.Errorf("%s: b has jobs for %v, want %v", step, got, want)
			}
			for id, every := range want {
				j, ok := got[id]
				if !ok || j.every != every {
					t.Errorf("%s: feed %d job %+v, want every %v", step, id, j, every)
					continue
				}
				last := b.feed(id).LastRunAt
				if d := j.next.Sub(last.Add(every)); d < -time.Minute || d > time.Minute {
					t.Errorf("%s: feed %d next run %v, want %v after its last run %v", step, id, j.next, every, last)
				}
			}
			if b.r.Running(f.ID) || b.r.Running(keep.ID) || srv.requests.Load() != requests {
				t.Errorf("%s: the reconcile pass ran a feed", step)
			}
			return got
		}

		if got := scheduledJobs(t, b.r); len(got) != 0 {
			t.Fatalf("b started before the feeds existed but has jobs %v", got)
		}
		first := reconcile("created", map[int64]time.Duration{keep.ID: 4 * time.Hour, f.ID: 4 * time.Hour})
		if again := reconcile("unchanged", map[int64]time.Duration{keep.ID: 4 * time.Hour, f.ID: 4 * time.Hour}); again[keep.ID].id != first[keep.ID].id || again[f.ID].id != first[f.ID].id {
			t.Error("a pass with nothing to change replaced jobs")
		}

		hours := 12
		if _, err := a.m.UpdateFeed(ctx, f.ID, feeds.FeedUpdate{PollingFrequency: &hours}); err != nil {
			t.Fatal(err)
		}
		reconcile("re-timed", map[int64]time.Duration{keep.ID: 4 * time.Hour, f.ID: 12 * time.Hour})

		if _, err := a.m.SetEnabled(ctx, f.ID, false, true); err != nil {
			t.Fatal(err)
		}
		reconcile("disabled", map[int64]time.Duration{keep.ID: 4 * time.Hour})

		if _, err := a.m.SetEnabled(ctx, f.ID, true, false); err != nil {
			t.Fatal(err)
		}
		a.r.Wait()
		reconcile("enabled", map[int64]time.Duration{keep.ID: 4 * time.Hour, f.ID: 12 * time.Hour})

		if err := a.m.DeleteFeed(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
		got := reconcile("deleted", map[int64]time.Duration{keep.ID: 4 * time.Hour})
		if got[keep.ID].id != first[keep.ID].id {
			t.Error("the untouched feed's job was replaced")
		}
		if runs, err := st.FeedRuns(ctx, keep.ID, 10); err != nil || len(runs) != 1 {
			t.Errorf("feed %d has %d runs (%v), want only a's first", keep.ID, len(runs), err)
		}
	})
}

// A pass that read the store before the runner's own API changed a job is
// dropped instead of undoing that change.
func TestReconcileYieldsToLocalChanges(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		srv := newTSVServer(t, ipRows(1, 3))
		old := h.create(srv.URL+"/feed.tsv", func(in *feeds.CustomFeedInput) { in.Name = "old" })
		h.r.Wait()

		h.r.mu.Lock()
		gen := h.r.gen
		h.r.mu.Unlock()
		stale, err := st.EnabledFeeds(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Meanwhile this runner's API creates one feed and disables another.
		f := h.create(srv.URL+"/feed.tsv?new", func(in *feeds.CustomFeedInput) { in.Name = "new" })
		h.r.Wait()
		if _, err := h.m.SetEnabled(ctx, old.ID, false, true); err != nil {
			t.Fatal(err)
		}
		applied, err := h.r.reconcileWith(gen, stale)
		if err != nil || applied {
			t.Errorf("stale pass: applied %v, %v", applied, err)
		}
		jobs := scheduledJobs(t, h.r)
		if _, ok := jobs[f.ID]; !ok || len(jobs) != 1 {
			t.Errorf("after the stale pass: jobs %v, want only feed %d", jobs, f.ID)
		}

		// A fresh pass agrees with what the API did.
		if err := h.r.reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if jobs := scheduledJobs(t, h.r); len(jobs) != 1 || jobs[f.ID].id == (uuid.UUID{}) {
			t.Errorf("after a fresh pass: jobs %v, want only feed %d", jobs, f.ID)
		}
	})
}

// A due feed another instance enabled gets a job that fires at once rather
// than a run started by the pass; the scheduled run then skips a feed that
// ran recently elsewhere.
func TestReconcileDueFeed(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		b := &store.Feed{Name: "OTX", Type: store.FeedBuiltin, Kind: "none", Category: "builtin", Enabled: true, RetentionPeriod: 30}
		if err := st.CreateFeed(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := h.r.reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		// Under load the job may already have fired; a run the pass
		// started itself would say so.
		h.r.mu.Lock()
		ar, running := h.r.running[b.ID]
		h.r.mu.Unlock()
		if running && ar.why != runScheduled {
			t.Errorf("the pass started a run itself (reason %d)", ar.why)
		}
		jobs := scheduledJobs(t, h.r)
		if j, ok := jobs[b.ID]; !ok || j.every != 24*time.Hour {
			t.Fatalf("due built-in feed: jobs %v, want one every 24 h", jobs)
		}
		// Its job fires at once, through the scheduler: wait for that run.
		for h.lastRunOrNil(b.ID) == nil {
			time.Sleep(10 * time.Millisecond)
		}
		h.r.Wait()
		if run := h.lastRun(b.ID); run.EndedAt == nil || !strings.Contains(run.ErrorDetail, "no source") {
			t.Errorf("scheduled run of a built-in feed without a source = %+v", run)
		}
	})
}

func (h *harness) lastRunOrNil(id int64) *store.FeedRun {
	h.t.Helper()
	runs, err := h.st.FeedRuns(context.Background(), id, 1)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(runs) == 0 {
		return nil
	}
	return &runs[0]
}

// runHeldElsewhere starts two runners on st, a and b, and a TSV feed
// through a that runs once; then b runs the feed again with body, and the
// run is held at the server until gate is closed.
func runHeldElsewhere(t *testing.T, st *store.Store, body string) (a, b *harness, f *store.Feed, gate chan struct{}) {
	t.Helper()
	a = newHarness(t, st, tsv.Options{})
	b = newHarness(t, st, tsv.Options{})
	srv := newTSVServer(t, ipRows(1, 4))
	f = a.create(srv.URL+"/feed.tsv", nil)
	a.r.Wait()
	gate, started := make(chan struct{}), make(chan struct{}, 1)
	srv.set(func(s *tsvServer) { s.gate, s.started, s.body = gate, started, body })
	if _, err := b.m.RunNow(context.Background(), f.ID); err != nil {
		t.Fatal(err)
	}
	<-started
	return a, b, f, gate
}

// A run on one instance stops when another instance disables its feed: the
// reconcile pass cancels it, and the feed shows Disabled.
func TestReconcileCancelsRunOfFeedDisabledElsewhere(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a, b, f, gate := runHeldElsewhere(t, st, ipRows(1, 4))
		defer close(gate)
		if _, err := a.m.SetEnabled(ctx, f.ID, false, true); err != nil {
			t.Fatal(err)
		}
		if !b.r.Running(f.ID) {
			t.Fatal("b's run ended before b learned of the change")
		}
		if err := b.r.reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		b.r.Wait()
		if b.r.Running(f.ID) {
			t.Error("b's run goes on after the feed was disabled")
		}
		run := b.lastRun(f.ID)
		if run.ErrorKind != store.MessageStopped || run.EndedAt == nil || !strings.Contains(run.Note, "disabled") {
			t.Errorf("b's run = %+v", run)
		}
		if got := b.feed(f.ID); got.Enabled || got.StatusMessage != store.MessageDisabled {
			t.Errorf("feed after the cancelled run: enabled=%v %q", got.Enabled, got.StatusMessage)
		}
	})
}

// A feed deleted through one instance while another runs it: the other's
// batches are refused, and nothing of the feed remains.
func TestDeleteWhileRunningElsewhere(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a, b, f, gate := runHeldElsewhere(t, st, ipRows(1, 40))
		if err := a.m.DeleteFeed(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
		close(gate)
		b.r.Wait()
		for _, q := range []string{"SELECT COUNT(*) FROM feeds", "SELECT COUNT(*) FROM sightings", "SELECT COUNT(*) FROM iocs"} {
			if n := a.count(q); n != 0 {
				t.Errorf("%s = %d after the feed was deleted", q, n)
			}
		}
	})
}
