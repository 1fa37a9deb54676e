package ingest

import (
	"context"
	"errors"

	"github.com/tifeeds/tifeeds/store"
)

// reconcileJob is the reconciler's task.
func (r *Runner) reconcileJob(ctx context.Context) {
	if err := r.reconcile(ctx); err != nil {
		r.log.Error("Unable to reconcile the feed schedule", "error", err)
	}
}

// reconcile matches the feeds' jobs with the enabled feeds of the store,
// which the other instances sharing the database change too: it schedules
// the feeds that have no job here, re-times the jobs whose interval
// changed, and removes the jobs (and cancels the runs) of feeds disabled or
// deleted. It starts no
// run itself: a due feed gets a job that fires at once, and that scheduled
// run skips a feed another instance holds or ran recently.
func (r *Runner) reconcile(ctx context.Context) error {
	r.mu.Lock()
	gen := r.gen
	r.mu.Unlock()
	feeds, err := r.runs.EnabledFeeds(ctx)
	if err != nil {
		return err
	}
	_, err = r.reconcileWith(gen, feeds)
	// A run here of a feed disabled or deleted elsewhere stops too, as it
	// would had that been done here. The feed is read again first: it may
	// have been enabled since the list was read, and this run started.
	for _, id := range r.runningNotIn(feeds) {
		f, ferr := r.runs.Feed(ctx, id)
		switch {
		case errors.Is(ferr, store.ErrNotFound):
			r.signalRun(id, errDeleted)
		case ferr != nil:
			err = errors.Join(err, ferr)
		case !f.Enabled:
			r.signalRun(id, errDisabled)
		default:
			continue
		}
		r.log.Info("Cancelled the run of a feed disabled or deleted by another instance", "feed_id", id)
	}
	return err
}

// runningNotIn lists the feeds running here that are not among feeds.
func (r *Runner) runningNotIn(feeds []store.Feed) []int64 {
	listed := make(map[int64]bool, len(feeds))
	for i := range feeds {
		listed[feeds[i].ID] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []int64
	for id := range r.running {
		if !listed[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

// signalRun cancels the feed's run in flight, if any, without waiting for
// it to end.
func (r *Runner) signalRun(feedID int64, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ar := r.running[feedID]; ar != nil {
		ar.cancel(cause)
	}
}

// reconcileWith applies the enabled feeds read when the jobs were at
// generation gen. If this runner changed a job since (its API creating,
// re-timing, enabling or disabling a feed), feeds may be older than that
// change and would undo it: the pass is dropped (applied is false) and the
// next one catches up.
func (r *Runner) reconcileWith(gen uint64, feeds []store.Feed) (applied bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen != gen || r.stopping.Load() {
		return false, nil
	}
	enabled := make(map[int64]bool, len(feeds))
	var errs []error
	for i := range feeds {
		f := &feeds[i]
		enabled[f.ID] = true
		every := r.interval(f)
		fj, ok := r.jobs[f.ID]
		if ok && fj.every == every {
			continue
		}
		at, _ := r.nextRun(f, every)
		if err := r.scheduleLocked(f.ID, every, at); err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			r.log.Info("Re-timed a feed changed by another instance", "feed_id", f.ID, "every", every)
		} else {
			r.log.Info("Scheduled a feed enabled by another instance", "feed_id", f.ID, "every", every)
		}
	}
	for id := range r.jobs {
		if !enabled[id] {
			r.unscheduleLocked(id)
			r.log.Info("Unscheduled a feed disabled or deleted by another instance", "feed_id", id)
		}
	}
	return true, errors.Join(errs...)
}
