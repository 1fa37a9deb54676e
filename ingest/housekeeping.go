package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/tifeeds/tifeeds/store"
)

// The run history a feed keeps: runs that ended more than RunHistoryAge
// ago are deleted by the sweeper, except each feed's newest RunHistoryKeep.
const (
	RunHistoryAge  = 90 * 24 * time.Hour
	RunHistoryKeep = 50
)

// closeOrphanedRuns closes as Stopped the runs left open by an instance
// that is gone: killed, crashed, or cut from the database (its feed lock,
// held on a connection of its own, is then free). A run of a feed running
// here, or locked by another instance, is going on and is left alone.
// Closing an old run leaves a feed that a newer run changed as that run
// left it (see store.FinishRun). It returns the feeds the closing left
// Stopped, which are to be resumed.
func (r *Runner) closeOrphanedRuns(ctx context.Context) ([]int64, error) {
	runs, err := r.runs.UnfinishedRuns(ctx)
	if err != nil {
		return nil, err
	}
	var stopped []int64
	for i := range runs {
		run := &runs[i]
		if r.Running(run.FeedID) {
			// Its end is recorded by the run itself; on SQLite, where the
			// lock below always succeeds, this is what tells.
			continue
		}
		unlock, ok, err := r.runs.TryLockFeed(ctx, run.FeedID)
		if err != nil {
			return stopped, err
		}
		if !ok {
			continue
		}
		run.ErrorKind = store.MessageStopped
		run.ErrorDetail = "tifeeds stopped during the run"
		run.Note = "interrupted; the next run resumes from the last checkpoint"
		f, err := r.runs.FinishRun(ctx, run, store.MessageStopped)
		unlock()
		switch {
		case errors.Is(err, store.ErrRunClosed) || errors.Is(err, store.ErrNotFound):
			continue // it ended (or its feed went) since the list was read
		case err != nil:
			return stopped, err
		}
		r.log.Warn("Closed a run whose instance stopped", "feed_id", run.FeedID, "run_id", run.ID)
		r.publishEnd(run, run.ErrorKind)
		r.bus.PublishFeed(f)
		if f.Enabled && f.StatusMessage == store.MessageStopped {
			stopped = append(stopped, f.ID)
		}
	}
	return stopped, nil
}

// orphanJob is the periodic closing of orphaned runs; this instance takes
// over the feeds they interrupted.
func (r *Runner) orphanJob(ctx context.Context) {
	stopped, err := r.closeOrphanedRuns(ctx)
	if err != nil {
		r.log.Error("Unable to close the runs of stopped instances", "error", err)
	}
	for _, id := range stopped {
		r.startRun(r.base, id, runRequest{why: runResume})
	}
}

// sweep deletes expired sightings and the IoCs left without one.
func (r *Runner) sweep(ctx context.Context) {
	sightings, iocs, err := r.runs.SweepExpired(ctx, r.opts.Now(), r.opts.SweepBatch)
	if err != nil {
		r.log.Error("Unable to sweep expired indicators", "error", err)
		return
	}
	if sightings > 0 || iocs > 0 {
		r.log.Info("Swept expired indicators", "count", iocs, "sightings", sightings)
	}
	runs, err := r.runs.PruneFeedRuns(ctx, r.opts.Now().Add(-RunHistoryAge), RunHistoryKeep)
	if err != nil {
		r.log.Error("Unable to prune the run history", "error", err)
		return
	}
	if runs > 0 {
		r.log.Info("Pruned old feed runs", "count", runs)
	}
	r.pruneAudit(ctx)
}

// pruneAudit deletes the audit records older than the retention.
func (r *Runner) pruneAudit(ctx context.Context) {
	n, err := r.runs.PruneAuditEvents(ctx, r.opts.Now().Add(-r.opts.AuditRetention))
	if err != nil {
		r.log.Error("Unable to prune the audit log", "error", err)
		return
	}
	if n > 0 {
		r.log.Info("Pruned old audit records", "count", n)
	}
}
