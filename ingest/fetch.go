package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// fetch runs the feed's source into a batch sink and says how it went.
func (r *Runner) fetch(ctx context.Context, f *store.Feed, run *store.FeedRun) (RunStats, outcome) {
	kind, ok := r.sources.Lookup(f.SourceKey())
	if !ok {
		return RunStats{}, failed(noSourceError(f))
	}
	req, err := r.request(f, run)
	if err != nil {
		return RunStats{}, failed(err)
	}
	lim, spent, err := r.limits(ctx, f, kind, r.opts.Now().UTC())
	if err != nil {
		return RunStats{}, failed(err)
	}
	if spent {
		return RunStats{}, outcome{message: f.SuccessMessage(), note: lim.dailyNote()}
	}
	req.Limit = lim.run
	sink := r.batchSink(ctx, f, run, lim)
	download := r.downloadProgress(f.ID, run.ID, sink)
	safe := &safeSink{BatchSink: sink, stopping: &r.stopping, lists: &completeLists{},
		downloaded: download.report, pace: lim.pace, cursor: f.Cursor}
	err = r.sources.newSource(kind).Fetch(ctx, req, safe)
	download.end()
	return r.settle(ctx, f, run, safe, lim, err)
}

// request is what a run of f asks of its source: where the last run
// stopped, the backfill bound and the feed's settings in clear.
func (r *Runner) request(f *store.Feed, run *store.FeedRun) (source.Request, error) {
	feed, err := r.sourceConfig(f)
	if err != nil {
		return source.Request{}, err
	}
	if f.Type == store.FeedBuiltin {
		feed.Key = r.sources.keyOf(f.Kind)
	}
	req := source.Request{Cursor: f.Cursor, Started: run.StartedAt, Feed: feed}
	if f.BackfillDays > 0 {
		req.Since = r.opts.Now().UTC().AddDate(0, 0, -f.BackfillDays)
	}
	return req, nil
}

// batchSink is the sink of a run of f, bounded by lim, that publishes its
// progress.
func (r *Runner) batchSink(ctx context.Context, f *store.Feed, run *store.FeedRun, lim runLimits) *BatchSink {
	var lastFeedEvent time.Time
	return NewBatchSink(r.st, f.ID, run.ID, BatchOptions{
		BatchSize: r.opts.BatchSize,
		Limit:     lim.run,
		AddLimit:  lim.added,
		Retention: time.Duration(f.RetentionPeriod) * 24 * time.Hour,
		Now:       r.opts.Now,
		Allowlist: r.opts.Allowlist,
		Watch:     r.opts.Assets,
		OnProgress: func(s RunStats) {
			r.bus.Publish(events.Event{FeedID: f.ID, Progress: &events.Progress{FeedID: f.ID, RunID: run.ID,
				Fetched: s.Fetched, Stored: s.Stored, Rejected: s.Rejected}})
			// Each stored batch moves the feed's last ingestion: announce
			// it, at most once a second so a fast run does not flood readers.
			if s.Stored > 0 && time.Since(lastFeedEvent) >= time.Second {
				lastFeedEvent = time.Now()
				if cur, err := r.st.Feed(ctx, f.ID); err == nil {
					r.bus.PublishFeed(cur)
				}
			}
		},
	})
}

// settle writes what the run brought as its end err allows, and says how
// the run ended.
func (r *Runner) settle(ctx context.Context, f *store.Feed, run *store.FeedRun, safe *safeSink, lim runLimits, err error) (RunStats, outcome) {
	sink := safe.BatchSink
	unchanged := errors.Is(err, ioc.ErrUnchanged)
	if unchanged {
		err = nil
	}
	limitHit := errors.Is(err, source.ErrLimitReached) || lim.pace != nil && errors.Is(err, source.ErrPaceReached)
	endNote := lim.endNote
	if capped := (*source.RunCapped)(nil); errors.As(err, &capped) {
		limitHit, endNote = true, func(RunStats) string { return capped.Note }
	}
	var settleErr error
	if err == nil || limitHit {
		if ferr := sink.Flush(ctx); ferr != nil {
			err, limitHit = ferr, false
		}
	} else {
		// What came before the last checkpoint is written before the run
		// ends, so that the next run resumes from there.
		settleErr = sink.Settle(ctx)
	}
	stats := sink.Stats()
	bl := lim.pace.backlog(r.opts.Now())
	lists := safe.lists.list()
	if limitHit || (err == nil && stats.LimitReached) {
		o := outcome{message: f.SuccessMessage(), backlog: bl}
		if safe.lastCursor() != "" { // the limit was used up before the end of the source
			o.note = endNote(stats)
		}
		// The lists read to their end before the limit was reached are
		// complete all the same (a source never names one it read in part).
		o.note = joinNotes(o.note, r.expireLists(ctx, f, run, lists))
		return stats, o
	}
	if err == nil {
		o := outcome{message: f.SuccessMessage(), backlog: bl}
		switch {
		case unchanged:
			o.note = noteUnchanged
		case !stats.LimitReached:
			// Complete and successful: the snapshot lists read whole lose
			// what they no longer hold.
			o.note = r.expireLists(ctx, f, run, lists)
		}
		return stats, o
	}
	o := failedOutcome(ctx, err)
	o.backlog = bl
	if settleErr != nil && o.message != store.MessageDisabled {
		r.log.Error("Unable to write what came before the run's last checkpoint", "feed_id", f.ID, "run_id", run.ID, "error", ioc.MaskURLs(settleErr.Error()))
		o.detail += "; what came before the last checkpoint was not written either (" + settleErr.Error() + "): the next run fetches it again"
	} else if partial := (*ioc.PartialFailure)(nil); errors.As(err, &partial) && o.kind != store.MessageStopped {
		// The sub-requests that worked were stored; the lists among them
		// read whole expire what they dropped, as in a successful run.
		o.note = r.expireLists(ctx, f, run, lists)
	}
	return stats, o
}

// failed is the outcome of a run that failed with err.
func failed(err error) outcome {
	kind := string(ioc.FailureOf(err))
	return outcome{kind: kind, detail: err.Error(), message: kind}
}

func joinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// failedOutcome says how a run that failed with err ends: stopped by
// shutdown, cancelled because its feed was disabled (here or, seen by its
// writes, on another instance), or failed.
func failedOutcome(ctx context.Context, err error) outcome {
	switch cause := context.Cause(ctx); {
	case errors.Is(err, errStopping) || errors.Is(cause, errStopping):
		return outcome{kind: store.MessageStopped, message: store.MessageStopped,
			detail: "tifeeds stopped during the run", note: "the next start resumes from the last checkpoint"}
	case errors.Is(cause, errDisabled) || errors.Is(cause, errDeleted) || errors.Is(cause, errReset):
		return outcome{kind: store.MessageStopped, message: store.MessageDisabled,
			detail: cause.Error(), note: "cancelled when the feed was disabled"}
	case errors.Is(err, store.ErrFeedDisabled):
		return outcome{kind: store.MessageStopped, message: store.MessageDisabled,
			detail: err.Error(), note: "stopped: the feed was disabled, reset or deleted during the run"}
	}
	return failed(err)
}

// safeSink is the runner's side of the source contract over a run's batch
// sink. It makes a stopping runner end runs at a safe point (the first
// checkpoint after Stop, once its batch is written, fails with
// errStopping), keeps the last cursor checkpointed, gathers the snapshot
// lists read whole and passes the download and backlog reports on.
type safeSink struct {
	*BatchSink
	stopping   *atomic.Bool
	lists      *completeLists // snapshot lists read whole; see snapshot.go
	downloaded func(read, total int64)
	pace       *constantRate // nil unless the kind writes at a constant rate

	mu     sync.Mutex
	cursor string // the last cursor checkpointed; the feed's at the start
}

// Indicator hands ind on. For a constant-rate kind the limit of the run is
// its share of the rate: the source is told so by source.ErrPaceReached.
func (s *safeSink) Indicator(ctx context.Context, ind ioc.Indicator) error {
	err := s.BatchSink.Indicator(ctx, ind)
	if s.pace != nil && errors.Is(err, source.ErrLimitReached) {
		return fmt.Errorf("%w: %w", source.ErrPaceReached, err)
	}
	return err
}

// Checkpoint hands cursor on and keeps it, then fails with errStopping
// when the runner is stopping.
func (s *safeSink) Checkpoint(ctx context.Context, cursor string) error {
	if err := s.BatchSink.Checkpoint(ctx, cursor); err != nil {
		return err
	}
	s.mu.Lock()
	s.cursor = cursor
	s.mu.Unlock()
	if s.stopping.Load() {
		return errStopping
	}
	return nil
}

// lastCursor is where the next run starts: the last cursor checkpointed.
func (s *safeSink) lastCursor() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor
}

// ListComplete records a list read whole: by this run (since zero) or by
// the runs since since.
func (s *safeSink) ListComplete(list string, since time.Time) { s.lists.add(list, since) }

// Backlog records how far a constant-rate source is.
func (s *safeSink) Backlog(written, total int64) {
	if s.pace != nil {
		s.pace.report(written, total)
	}
}

// Downloaded reports a download's progress.
func (s *safeSink) Downloaded(read, total int64) {
	if s.downloaded != nil {
		s.downloaded(read, total)
	}
}
