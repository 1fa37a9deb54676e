package ingest

import (
	"context"
	"fmt"

	"github.com/tifeeds/tifeeds/store"
)

// What the feed service (package feeds) asks of the runner when the API
// changes a feed.

// Schedule (re)schedules an enabled feed from its last run, running it at
// once when it is due or runNow is set.
func (r *Runner) Schedule(f *store.Feed, runNow bool) error { return r.scheduleDue(f, runNow) }

// Unschedule removes the feed's job.
func (r *Runner) Unschedule(feedID int64) { r.unschedule(feedID) }

// CancelDisabled cancels the feed's run here, recorded as cancelled by the
// feed's disabling, and waits for it to end.
func (r *Runner) CancelDisabled(feedID int64) { r.cancelRun(feedID, errDisabled) }

// CancelDeleted cancels the feed's run here for its deletion and waits for
// it to end.
func (r *Runner) CancelDeleted(feedID int64) { r.cancelRun(feedID, errDeleted) }

// CancelReset cancels the feed's run here for its reset and waits for it
// to end.
func (r *Runner) CancelReset(feedID int64) { r.cancelRun(feedID, errReset) }

// StartNow starts a run of the feed at once (Run now). It takes the feed's
// cluster-wide lock before it answers, so that of the instances asked at
// the same moment exactly one starts the run; busy says a run goes on,
// here or elsewhere. A run here that is recording its end does not count:
// the new run is queued behind it.
func (r *Runner) StartNow(ctx context.Context, feedID int64) (busy bool, err error) {
	answer, err := r.startRun(ctx, feedID, runRequest{why: runAsked, lockFirst: true})
	switch {
	case err != nil:
		return false, err
	case answer == runRefused:
		return false, fmt.Errorf("ingest: unable to run feed %d: %w", feedID, ErrRunnerStopped)
	}
	return answer == runBusy, nil
}

// RunAgain runs an enabled feed whose connection settings changed, so that
// corrected credentials show their effect at once rather than after a
// polling interval. A run in flight with the old settings finishes first.
func (r *Runner) RunAgain(feedID int64) {
	r.startRun(r.base, feedID, runRequest{why: runAsked, queue: true})
}
