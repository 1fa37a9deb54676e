package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// outcome is how a run ended.
type outcome struct {
	kind    string // error kind: a failure kind or Stopped; empty on success
	detail  string
	note    string
	message string // the feed's status message after the run
	backlog *backlog
}

// execute is one run: record, fetch, record, publish.
func (r *Runner) execute(ctx context.Context, f *store.Feed) {
	log := r.log.With("feed_id", f.ID)
	start := r.opts.Now()
	run, err := r.runs.StartRun(ctx, f.ID, start)
	if errors.Is(err, store.ErrNotFound) {
		log.Info("The feed was deleted before its run started")
		return
	}
	if err != nil {
		log.Error("Unable to start a run", "error", err)
		return
	}
	log = log.With("run_id", run.ID)
	log.Info("Feed run started")
	if cur, err := r.runs.Feed(ctx, f.ID); err == nil {
		r.bus.PublishFeed(cur)
	}

	stats, out := r.fetch(ctx, f, run)
	run.Fetched, run.Stored, run.Added, run.Rejected = stats.Fetched, stats.Stored, stats.Added, stats.Rejected
	run.Rejections = stats.Rejections
	// The detail is stored, shown and logged: the URLs it quotes lose their
	// query tokens and user information whichever error put them there.
	run.ErrorKind, run.ErrorDetail, run.Note = out.kind, ioc.MaskURLs(out.detail), out.note
	if b := out.backlog; b != nil {
		run.BacklogWritten, run.BacklogTotal, run.ExpectedCompletion = b.written, b.total, b.expected
	}
	// Marked before the end is committed, so that whoever sees the run
	// ended in the store finds it ended here too: their Run now is queued,
	// never refused as already running. Until the commit, RunNow sees the
	// run open in the store and refuses it as it should.
	r.markEnded(f.ID)
	after, err := r.recordEnd(log, run, out.message)
	// The run has ended here whether its end was recorded or not: every
	// subscriber, on every instance, is told so, or it would go on
	// repeating the run's last counters.
	switch {
	case errors.Is(err, store.ErrRunClosed):
		// Another instance closed the run, taking this one for gone (its
		// lock's connection was lost), or a reset erased it: the feed shows
		// what that left, and nothing of this run's end is recorded.
		log.Warn("The run was closed by another instance or a reset; its end is not recorded", "count", run.Stored)
		r.publishEnd(run, store.MessageStopped)
		r.bus.PublishFeed(after)
		return
	case errors.Is(err, store.ErrNotFound):
		// Deleted (here or on another instance) during the run: its runs
		// went with it, and the deletion was announced.
		log.Info("The feed was deleted during the run; its end is not recorded", "count", run.Stored)
		r.publishEnd(run, store.MessageStopped)
		return
	case err != nil:
		// The database stayed out of reach until the runner stopped: the
		// run is closed as Stopped by the next pass over orphaned runs.
		log.Error("Unable to record the end of a run", "error", err)
		r.publishEnd(run, store.MessageStopped)
		return
	}
	r.publishEnd(run, run.ErrorKind)
	r.bus.PublishFeed(after)
	if out.kind != "" && out.kind != store.MessageStopped {
		log.Warn("Feed run failed", "count", run.Stored, "error", run.ErrorDetail)
	} else {
		log.Info("Feed run ended", "count", run.Stored, "note", run.Note)
	}
}

// publishEnd publishes the final progress event of run, ended as kind.
func (r *Runner) publishEnd(run *store.FeedRun, kind string) {
	r.bus.Publish(events.Event{FeedID: run.FeedID, Progress: &events.Progress{FeedID: run.FeedID, RunID: run.ID,
		Fetched: run.Fetched, Stored: run.Stored, Rejected: run.Rejected, Done: true, ErrorKind: kind}})
}

// recordEnd records the end of run and the feed state it leaves. While the
// database is unavailable (store.IsUnavailable, or an attempt timing out),
// it tries again with a doubling wait until it succeeds or the runner
// stops (the next start then closes the run as Stopped): a run left open would show its feed
// running, Initializing on a first run, until a restart. The feed stays
// among the running ones meanwhile, so no second run starts over it. Each
// attempt goes on even when the run was cancelled, so a stop or a disable
// is recorded too.
func (r *Runner) recordEnd(log *slog.Logger, run *store.FeedRun, message string) (*store.Feed, error) {
	wait := r.opts.RecordRetry
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		after, err := r.runs.FinishRun(ctx, run, message)
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info("Recorded the end of a run once the database answered", "attempts", attempt)
			}
			return after, nil
		}
		if !store.IsUnavailable(err) && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err // the feed is gone, or a bug: trying again changes nothing
		}
		log.Error("Unable to record the end of a run; trying again", "error", err, "attempts", attempt, "retry_in", wait.String())
		select {
		case <-r.base.Done():
			return nil, fmt.Errorf("ingest: end of run %d not recorded: %w", run.ID, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, MaxRecordRetry)
	}
}

// sourceConfig is what f's source needs, its secret opened; a feed-list
// endpoint gets its key back.
func (r *Runner) sourceConfig(f *store.Feed) (source.Feed, error) {
	secret, err := r.secrets.Open(f.Secret)
	if err != nil {
		return source.Feed{}, ioc.Fail(ioc.InvalidCredentials, fmt.Errorf("ingest: the stored secret does not open (has the secret key changed?): %w", err))
	}
	cfg := source.Feed{URL: f.CollectionURL, Username: f.Username, Password: secret}
	if f.Type == store.FeedPremium && premium.Kind(f.Kind) == premium.FeedList && f.CollectionURL != "" {
		if cfg.URL, err = premium.WithKey(f.CollectionURL, secret); err != nil {
			return source.Feed{}, ioc.Fail(ioc.InvalidURL, err)
		}
		cfg.Password = ""
	}
	return cfg, nil
}
