package ingest

import (
	"context"
	"errors"

	"github.com/tifeeds/tifeeds/store"
)

// cancelRun cancels the feed's run in flight, if any, and waits for it to end.
func (r *Runner) cancelRun(feedID int64, cause error) {
	r.mu.Lock()
	ar := r.running[feedID]
	r.mu.Unlock()
	if ar != nil {
		ar.cancel(cause)
		<-ar.done
	}
}

// goRun starts a run of the feed in the background.
func (r *Runner) goRun(feedID int64) { r.goRunAs(feedID, runAsked) }

// goRunAs starts a run of the feed in the background, for the given reason.
// A feed running here is not run twice: asking again is a no-op.
func (r *Runner) goRunAs(feedID int64, why runReason) { r.askRun(feedID, why, false) }

// runAnswer is what askRun did.
type runAnswer int

const (
	runStarted runAnswer = iota // a run was started
	runQueued                   // one runs as soon as the current one lets go of the feed
	runBusy                     // the feed is running here; nothing was done
	runRefused                  // the runner is stopping
)

// askRun starts a run of the feed in the background. While a run of it is
// in flight here, the answer is runBusy, unless queue is set or that run is
// recording its end (ended): then one more run is queued to start when it
// lets go of the feed. The run is claimed under the lock, before
// the goroutine starts, so that two asks never both start one.
func (r *Runner) askRun(feedID int64, why runReason, queue bool) runAnswer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping.Load() {
		return runRefused
	}
	if ar, busy := r.running[feedID]; busy {
		if queue || ar.ended {
			ar.again = true
			return runQueued
		}
		r.log.Debug("Feed already running", "feed_id", feedID)
		return runBusy
	}
	ctx, ar := r.claimLocked(feedID)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.runClaimed(ctx, feedID, ar, why, nil)
	}()
	return runStarted
}

// claimLocked marks the feed running here; r.mu is held.
func (r *Runner) claimLocked(feedID int64) (context.Context, *activeRun) {
	ctx, cancel := context.WithCancelCause(r.base)
	ar := &activeRun{cancel: cancel, done: make(chan struct{})}
	r.running[feedID] = ar
	return ctx, ar
}

// markEnded records that the feed's run here is recording its end.
func (r *Runner) markEnded(feedID int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ar := r.running[feedID]; ar != nil {
		ar.ended = true
	}
}

// runReason is why a run starts.
type runReason int

const (
	runAsked     runReason = iota // created, enabled, run now
	runScheduled                  // its job fired
	// runResume continues a feed a stop interrupted: it runs only if the
	// feed still shows Stopped once locked, so that instances starting
	// together, or a survivor and a restarted instance, resume it once.
	runResume
)

// runFeed runs the feed unless it is already running here or elsewhere;
// the scheduler calls it.
func (r *Runner) runFeed(feedID int64, why runReason) {
	scheduled := why == runScheduled
	r.mu.Lock()
	if r.stopping.Load() {
		r.mu.Unlock()
		return
	}
	if scheduled {
		r.wg.Add(1)
		defer r.wg.Done()
	}
	if _, busy := r.running[feedID]; busy {
		r.mu.Unlock()
		r.log.Debug("Feed already running", "feed_id", feedID)
		return
	}
	ctx, ar := r.claimLocked(feedID)
	r.mu.Unlock()
	r.runClaimed(ctx, feedID, ar, why, nil)
}

// startNow starts a run of the feed for RunNow. Unlike askRun it takes the
// feed's cluster-wide lock before it answers, so that of the instances
// asked at the same moment exactly one says it started the run; the others
// answer runBusy (ErrAlreadyRunning), not a success for a run that their
// runner would then skip as running elsewhere.
func (r *Runner) startNow(ctx context.Context, feedID int64) (runAnswer, error) {
	r.mu.Lock()
	if r.stopping.Load() {
		r.mu.Unlock()
		return runRefused, nil
	}
	if ar, busy := r.running[feedID]; busy {
		defer r.mu.Unlock()
		if ar.ended {
			ar.again = true
			return runQueued, nil
		}
		return runBusy, nil
	}
	runCtx, ar := r.claimLocked(feedID)
	r.wg.Add(1)
	r.mu.Unlock()
	unlock, ok, err := r.st.TryLockFeed(ctx, feedID)
	if err != nil || !ok {
		r.release(feedID, ar)
		r.wg.Done()
		if err != nil {
			return 0, err
		}
		r.log.Info("Run now of a feed running in another instance", "feed_id", feedID)
		return runBusy, nil
	}
	go func() {
		defer r.wg.Done()
		r.runClaimed(runCtx, feedID, ar, runAsked, unlock)
	}()
	return runStarted, nil
}

// runClaimed runs a feed claimed by claimLocked, lets go of it, and starts
// the run queued meanwhile, if any. A scheduled run is skipped when another
// instance ran the feed recently. unlock, when not nil, releases the
// feed's lock in the store, taken already.
func (r *Runner) runClaimed(ctx context.Context, feedID int64, ar *activeRun, why runReason, unlock func()) {
	defer r.release(feedID, ar)
	r.lockAndExecute(ctx, feedID, why, unlock)
}

// release lets go of a feed claimed by claimLocked, and starts the run
// queued meanwhile, if any.
func (r *Runner) release(feedID int64, ar *activeRun) {
	ar.cancel(nil)
	r.mu.Lock()
	delete(r.running, feedID)
	again := ar.again && !r.stopping.Load()
	r.mu.Unlock()
	close(ar.done)
	if again {
		r.goRun(feedID)
	}
}

// lockAndExecute takes the feed's lock in the store (unless unlock says it
// is held already), checks the feed still wants this run, and runs it.
func (r *Runner) lockAndExecute(ctx context.Context, feedID int64, why runReason, unlock func()) {
	scheduled := why == runScheduled
	if unlock == nil {
		var ok bool
		var err error
		unlock, ok, err = r.st.TryLockFeed(ctx, feedID)
		if err != nil {
			r.log.Error("Unable to lock feed", "feed_id", feedID, "error", err)
			return
		}
		if !ok {
			r.log.Info("Feed is running in another instance", "feed_id", feedID)
			return
		}
	}
	defer unlock()
	f, err := r.st.Feed(ctx, feedID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			r.log.Error("Unable to read feed", "feed_id", feedID, "error", err)
		}
		return
	}
	if !f.Enabled {
		return
	}
	if why == runResume && f.StatusMessage != store.MessageStopped {
		r.log.Info("Feed resumed elsewhere, skipping", "feed_id", feedID)
		return
	}
	if scheduled && f.LastRunAt != nil && r.opts.Now().Sub(*f.LastRunAt) < r.interval(f)/2 {
		r.log.Info("Feed ran recently, skipping", "feed_id", feedID)
		return
	}
	r.execute(ctx, f)
}
