package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tifeeds/tifeeds/store"
)

func (r *Runner) interval(f *store.Feed) time.Duration {
	if f.Type == store.FeedBuiltin {
		return store.BuiltinPollingHours * time.Hour
	}
	return time.Duration(f.PollingFrequency) * time.Hour
}

// jobName names the feed's job in the scheduler.
func jobName(feedID int64) string { return "feed:" + strconv.FormatInt(feedID, 10) }

// NextRun returns when the feed's job runs next; ok is false when the feed
// has no job (disabled or unknown).
func (r *Runner) NextRun(feedID int64) (time.Time, bool) {
	r.mu.Lock()
	fj, ok := r.jobs[feedID]
	r.mu.Unlock()
	if !ok {
		return time.Time{}, false
	}
	for _, j := range r.sched.Jobs() {
		if j.ID() == fj.id {
			next, err := j.NextRun()
			return next, err == nil
		}
	}
	return time.Time{}, false
}

// Running reports whether this process is running the feed.
func (r *Runner) Running(feedID int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.running[feedID]
	return ok
}

// scheduleDue (re)schedules an enabled feed from its last run, running it
// at once when it is due or when now is set.
func (r *Runner) scheduleDue(f *store.Feed, now bool) error {
	every := r.interval(f)
	at, due := r.nextRun(f, every)
	if due || now {
		now, at = true, r.opts.Now().Add(every)
	}
	if err := r.schedule(f.ID, every, at); err != nil {
		return err
	}
	if now {
		r.startRun(r.base, f.ID, runRequest{why: runAsked})
	}
	return nil
}

// scheduleResume schedules an enabled feed one interval from now and
// resumes it at once if it is still Stopped then (see runResume).
func (r *Runner) scheduleResume(f *store.Feed) error {
	every := r.interval(f)
	if err := r.schedule(f.ID, every, r.opts.Now().Add(every)); err != nil {
		return err
	}
	r.startRun(r.base, f.ID, runRequest{why: runResume})
	return nil
}

// nextRun is when the feed runs next: one interval after its last run, or
// at once (due) when it never ran or that time has passed.
func (r *Runner) nextRun(f *store.Feed, every time.Duration) (at time.Time, due bool) {
	if f.LastRunAt == nil || !f.LastRunAt.Add(every).After(r.opts.Now()) {
		return time.Time{}, true
	}
	return f.LastRunAt.Add(every), false
}

// schedule installs the feed's job: every `every` from `at`, or from now
// (its first run at once) when at is zero.
func (r *Runner) schedule(feedID int64, every time.Duration, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.scheduleLocked(feedID, every, at)
}

// scheduleLocked is schedule with r.mu held.
func (r *Runner) scheduleLocked(feedID int64, every time.Duration, at time.Time) error {
	if old, ok := r.jobs[feedID]; ok {
		if err := r.sched.RemoveJob(old.id); err != nil && !errors.Is(err, gocron.ErrJobNotFound) {
			return fmt.Errorf("ingest: unable to unschedule feed %d: %w", feedID, err)
		}
		delete(r.jobs, feedID)
		r.gen++
	}
	start := gocron.WithStartImmediately()
	if !at.IsZero() {
		start = gocron.WithStartDateTime(at)
	}
	j, err := r.sched.NewJob(gocron.DurationJob(every),
		gocron.NewTask(func() { r.startRun(r.base, feedID, runRequest{why: runScheduled, wait: true}) }),
		gocron.WithName(jobName(feedID)), gocron.WithTags("feed"),
		gocron.WithSingletonMode(gocron.LimitModeReschedule),
		gocron.WithStartAt(start))
	if err != nil {
		return fmt.Errorf("ingest: unable to schedule feed %d: %w", feedID, err)
	}
	r.jobs[feedID] = feedJob{id: j.ID(), every: every}
	r.gen++
	return nil
}

func (r *Runner) unschedule(feedID int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unscheduleLocked(feedID)
}

// unscheduleLocked is unschedule with r.mu held.
func (r *Runner) unscheduleLocked(feedID int64) {
	if fj, ok := r.jobs[feedID]; ok {
		if err := r.sched.RemoveJob(fj.id); err != nil && !errors.Is(err, gocron.ErrJobNotFound) {
			r.log.Error("Unable to unschedule feed", "feed_id", feedID, "error", err)
		}
		delete(r.jobs, feedID)
		r.gen++
	}
}

// watchBus makes a run here stop as soon as its feed is disabled, reset or
// deleted anywhere: the bus carries those changes from the other instances
// (through a Fanout) at once, where the reconcile pass or the run's next
// batch would find them only later. It ends when the runner stops.
func (r *Runner) watchBus() {
	events, cancel := r.bus.Subscribe(0)
	r.watching.Add(1)
	go func() {
		defer r.watching.Done()
		defer func() { cancel() }()
		for {
			select {
			case <-r.base.Done():
				return
			case ev, ok := <-events:
				if !ok { // dropped for lagging: listen again
					events, cancel = r.bus.Subscribe(0)
					continue
				}
				if (ev.Deleted || ev.Feed != nil && !ev.Feed.Enabled) && r.Running(ev.FeedID) {
					r.stopIfOff(ev.FeedID)
				}
			}
		}
	}()
}

// stopIfOff cancels the run here of a feed that the store shows disabled or
// deleted. The store is asked, not the event: an event can be older than an
// enable that started the run.
func (r *Runner) stopIfOff(feedID int64) {
	ctx, cancel := context.WithTimeout(r.base, 10*time.Second)
	defer cancel()
	f, err := r.runs.Feed(ctx, feedID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		r.signalRun(feedID, errDeleted)
	case err != nil:
		r.log.Warn("Unable to read a feed changed by another instance", "feed_id", feedID, "error", err)
		return
	case !f.Enabled:
		r.signalRun(feedID, errDisabled)
	default:
		return
	}
	r.log.Info("Cancelled the run of a feed disabled or deleted by another instance", "feed_id", feedID)
}
