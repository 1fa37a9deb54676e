package ingest

import (
	"context"
	"errors"

	"github.com/tifeeds/tifeeds/internal/background"
	"github.com/tifeeds/tifeeds/store"
)

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

// runRequest is how a run is asked for.
type runRequest struct {
	why runReason
	// queue asks, while the feed runs here, for one more run as soon as
	// that run lets go of it, instead of the answer runBusy.
	queue bool
	// lockFirst takes the feed's cluster-wide lock before answering, so
	// that of the instances asked at the same moment exactly one says it
	// started the run; the others answer runBusy, not a success for a run
	// that their runner would then skip as running elsewhere (RunNow).
	lockFirst bool
	// wait runs the feed in the caller's goroutine: the scheduler's job,
	// whose singleton mode must see the run go on. A waiting request never
	// queues a run: the run going on is this interval's.
	wait bool
}

// runAnswer is what startRun did.
type runAnswer int

const (
	runStarted runAnswer = iota // a run was started
	runQueued                   // one runs as soon as the current one lets go of the feed
	runBusy                     // the feed is running here, or elsewhere with lockFirst; nothing was done
	runRefused                  // the runner is stopping
)

// startRun is the one way a run starts. A feed running here is not run
// twice: the answer is runBusy, unless req.queue is set or that run is
// recording its end (then one more run is queued to start when it lets go
// of the feed). The run is claimed under the lock, before its goroutine
// starts, so that two requests never both start one. ctx bounds taking
// the lock of req.lockFirst only; the run itself lasts until the runner
// stops.
func (r *Runner) startRun(ctx context.Context, feedID int64, req runRequest) (runAnswer, error) {
	r.mu.Lock()
	if r.stopping.Load() {
		r.mu.Unlock()
		return runRefused, nil
	}
	if ar, busy := r.running[feedID]; busy {
		defer r.mu.Unlock()
		if req.queue || ar.ended && !req.wait {
			ar.again = true
			return runQueued, nil
		}
		r.log.Debug("Feed already running", "feed_id", feedID)
		return runBusy, nil
	}
	runCtx, ar := r.claimLocked(feedID)
	ar.why = req.why
	r.wg.Add(1) // under mu: Stop waits for every run claimed before it
	r.mu.Unlock()
	var unlock func()
	if req.lockFirst {
		var ok bool
		var err error
		unlock, ok, err = r.runs.TryLockFeed(ctx, feedID)
		if err != nil || !ok {
			r.release(feedID, ar)
			r.wg.Done()
			if err != nil {
				return 0, err
			}
			r.log.Info("Run now of a feed running in another instance", "feed_id", feedID)
			return runBusy, nil
		}
	}
	run := func() {
		defer r.wg.Done()
		r.runClaimed(runCtx, feedID, ar, req.why, unlock)
	}
	if req.wait {
		run()
	} else {
		go run()
	}
	return runStarted, nil
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

// runClaimed runs a feed claimed by claimLocked and lets go of it. It takes
// the feed's lock in the store (unless unlock says it is held already) and
// checks that the feed still wants this run: enabled, still Stopped for a
// resume, and for a scheduled run not run recently by another instance.
func (r *Runner) runClaimed(ctx context.Context, feedID int64, ar *activeRun, why runReason, unlock func()) {
	defer r.release(feedID, ar)
	if unlock == nil {
		var ok bool
		var err error
		unlock, ok, err = r.runs.TryLockFeed(ctx, feedID)
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
	f, err := r.runs.Feed(ctx, feedID)
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
	if why == runScheduled && f.LastRunAt != nil && r.opts.Now().Sub(*f.LastRunAt) < r.interval(f)/2 {
		r.log.Info("Feed ran recently, skipping", "feed_id", feedID)
		return
	}
	// A run's fetching and parsing is background work, as its batches are
	// (store.ApplyPrepared): requests take a core first.
	background.Run(func() { r.execute(ctx, f) })
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
		r.startRun(r.base, feedID, runRequest{why: runAsked})
	}
}

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
