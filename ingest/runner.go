package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// Defaults of Options' zero values.
const (
	DefaultBatchSize     = 20000
	DefaultSweepInterval = 15 * time.Minute
	DefaultSweepBatch    = 5000
	DefaultStopGrace     = 30 * time.Second
	// DefaultRecordRetry is the first wait before recording a run's end
	// again when the database refused it; the wait doubles up to
	// MaxRecordRetry.
	DefaultRecordRetry = time.Second
	MaxRecordRetry     = time.Minute
	// DefaultReconcileInterval bounds how long a feed changed on another
	// instance sharing the database waits to be (re)scheduled here.
	DefaultReconcileInterval = 30 * time.Second
	// DefaultOrphanInterval bounds how long the run of an instance that died
	// stays open (shown running) on the others.
	DefaultOrphanInterval = 15 * time.Second
	// DefaultKeyIndexInterval is the key indexer's tick: a quiet second
	// is what it waits for.
	DefaultKeyIndexInterval = time.Second
)

// Why a run's context ends.
var (
	errDisabled = errors.New("ingest: the feed was disabled")
	errDeleted  = errors.New("ingest: the feed was deleted")
	errReset    = errors.New("ingest: the feed was reset")
	errStopping = errors.New("ingest: tifeeds is stopping")
)

// ErrRunnerStopped is returned when a run is asked of a runner that stops.
var ErrRunnerStopped = errors.New("ingest: the runner is stopped")

// Options configure a Runner.
type Options struct {
	Store   *store.Store
	Secrets *store.Secrets
	Bus     *events.Bus
	Sources *Registry
	Log     *slog.Logger

	// BatchSize is how many indicators go into one write transaction.
	BatchSize int
	// SweepInterval is how often expired sightings are deleted.
	SweepInterval time.Duration
	// SweepBatch is how many expired rows one sweep transaction deletes.
	SweepBatch int
	// ReconcileInterval is how often the scheduled jobs are matched against
	// the enabled feeds in the store, to follow the feeds other instances
	// created, re-timed, enabled, disabled or deleted.
	ReconcileInterval time.Duration
	// StopGrace is how long Stop lets runs go on to their next checkpoint
	// before it cancels them.
	StopGrace time.Duration
	// RecordRetry is the first wait before recording the end of a run
	// again while the database is unavailable (doubling up to
	// MaxRecordRetry).
	RecordRetry time.Duration
	// OrphanInterval is how often the runs left open by an instance that is
	// gone (its feed lock free, not running here) are closed as Stopped.
	OrphanInterval time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Allowlist drops benign indicators before they are stored; one over
	// Store and Bus when nil.
	Allowlist *Allowlist
	// KeyIndexInterval is how often the key indexer looks for quiet to
	// bring the IoC key tables up to date (store.KeyIndexer).
	KeyIndexInterval time.Duration
}

// runStore is what the runner needs of the store to schedule, start, run
// and record runs, and to keep house; fetch writes through the batch sink.
type runStore interface {
	EnabledFeeds(ctx context.Context) ([]store.Feed, error)
	Feed(ctx context.Context, id int64) (*store.Feed, error)
	TryLockFeed(ctx context.Context, feedID int64) (unlock func(), ok bool, err error)
	StartRun(ctx context.Context, feedID int64, now time.Time) (*store.FeedRun, error)
	FinishRun(ctx context.Context, run *store.FeedRun, message string) (*store.Feed, error)
	UnfinishedRuns(ctx context.Context) ([]store.FeedRun, error)
	SweepExpired(ctx context.Context, now time.Time, batchSize int) (sightings, iocs int64, err error)
	PruneFeedRuns(ctx context.Context, cutoff time.Time, keep int) (int64, error)
}

// Runner schedules and runs the feeds and carries out the feed changes of
// the API that affect ingestion.
type Runner struct {
	st      *store.Store // fetch's, for the batch sink and the daily limits
	runs    runStore
	secrets *store.Secrets
	bus     *events.Bus
	sources *Registry
	log     *slog.Logger
	opts    Options

	sched    gocron.Scheduler
	base     context.Context
	stopAll  context.CancelCauseFunc
	stopping atomic.Bool
	wg       sync.WaitGroup
	watching sync.WaitGroup // watchBus, which ends with base

	mu      sync.Mutex
	jobs    map[int64]feedJob // feed id -> its gocron job
	running map[int64]*activeRun
	// gen counts the changes to jobs, so a reconcile pass can tell that the
	// jobs moved while it read the store.
	gen uint64
}

// feedJob is a feed's gocron job and the interval it was scheduled with.
type feedJob struct {
	id    uuid.UUID
	every time.Duration
}

type activeRun struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
	// ended is set as the run's end is about to be committed: once the
	// store shows the run ended, a run asked before the runner lets go of
	// the feed is queued (again) rather than refused or lost.
	ended bool
	// again asks for one more run as soon as this one lets go of the feed.
	again bool
}

// New returns a Runner; Start begins scheduling.
func New(o Options) (*Runner, error) {
	if o.Store == nil || o.Secrets == nil || o.Sources == nil {
		return nil, errors.New("ingest: a runner needs a store, secrets and sources")
	}
	if o.Bus == nil {
		o.Bus = events.NewBus()
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	if o.SweepBatch <= 0 {
		o.SweepBatch = DefaultSweepBatch
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.ReconcileInterval <= 0 {
		o.ReconcileInterval = DefaultReconcileInterval
	}
	if o.OrphanInterval <= 0 {
		o.OrphanInterval = DefaultOrphanInterval
	}
	if o.RecordRetry <= 0 {
		o.RecordRetry = DefaultRecordRetry
	}
	if o.KeyIndexInterval <= 0 {
		o.KeyIndexInterval = DefaultKeyIndexInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Allowlist == nil {
		o.Allowlist = NewAllowlist(o.Store, o.Bus, o.Log)
	}
	sched, err := gocron.NewScheduler(gocron.WithLocation(time.UTC), gocron.WithStopTimeout(o.StopGrace))
	if err != nil {
		return nil, fmt.Errorf("ingest: unable to make the scheduler: %w", err)
	}
	base, cancel := context.WithCancelCause(context.Background())
	return &Runner{
		st: o.Store, runs: o.Store, secrets: o.Secrets, bus: o.Bus, sources: o.Sources, log: o.Log, opts: o,
		sched: sched, base: base, stopAll: cancel,
		jobs: map[int64]feedJob{}, running: map[int64]*activeRun{},
	}, nil
}

// Start closes the runs a crash left open, schedules every enabled feed
// (at once when it is due or was stopped mid-run) and the expiry sweeper.
func (r *Runner) Start(ctx context.Context) error {
	if _, err := r.closeOrphanedRuns(ctx); err != nil {
		return err
	}
	// The user entries are in force before the first run.
	if err := r.opts.Allowlist.Load(ctx); err != nil {
		return fmt.Errorf("ingest: unable to read the allowlist: %w", err)
	}
	r.opts.Allowlist.Watch(r.base, r.opts.ReconcileInterval)
	r.opts.Allowlist.RemoveListedInBackground(r.base)
	feeds, err := r.runs.EnabledFeeds(ctx)
	if err != nil {
		return err
	}
	for i := range feeds {
		if feeds[i].StatusMessage == store.MessageStopped {
			err = r.scheduleResume(&feeds[i])
		} else {
			err = r.scheduleDue(&feeds[i], false)
		}
		if err != nil {
			return err
		}
	}
	r.watchBus()
	_, err = r.sched.NewJob(gocron.DurationJob(r.opts.SweepInterval), gocron.NewTask(r.sweep),
		gocron.WithName("sweeper"), gocron.WithSingletonMode(gocron.LimitModeReschedule),
		gocron.WithStartAt(gocron.WithStartImmediately()))
	if err != nil {
		return fmt.Errorf("ingest: unable to schedule the expiry sweeper: %w", err)
	}
	_, err = r.sched.NewJob(gocron.DurationJob(r.opts.OrphanInterval), gocron.NewTask(r.orphanJob),
		gocron.WithName("orphans"), gocron.WithSingletonMode(gocron.LimitModeReschedule))
	if err != nil {
		return fmt.Errorf("ingest: unable to schedule the closing of orphaned runs: %w", err)
	}
	keys := &store.KeyIndexer{Store: r.st}
	_, err = r.sched.NewJob(gocron.DurationJob(r.opts.KeyIndexInterval), gocron.NewTask(func(ctx context.Context) {
		if err := keys.Tick(ctx, r.opts.Now()); err != nil && ctx.Err() == nil {
			r.log.Error("Unable to index the indicators' keys", "error", err)
		}
	}), gocron.WithName("key indexer"), gocron.WithSingletonMode(gocron.LimitModeReschedule))
	if err != nil {
		return fmt.Errorf("ingest: unable to schedule the key indexer: %w", err)
	}
	_, err = r.sched.NewJob(gocron.DurationJob(r.opts.ReconcileInterval), gocron.NewTask(r.reconcileJob),
		gocron.WithName("reconciler"), gocron.WithSingletonMode(gocron.LimitModeReschedule))
	if err != nil {
		return fmt.Errorf("ingest: unable to schedule the reconciler: %w", err)
	}
	r.sched.Start()
	r.log.Info("Started feed scheduler", "count", len(feeds))
	return nil
}

// Stop lets the runs in flight reach their next checkpoint (a flushed
// batch), cancels those still going when ctx or the grace period ends, and
// stops the scheduler. Call it before closing the store.
func (r *Runner) Stop(ctx context.Context) error {
	r.mu.Lock()
	r.stopping.Store(true) // under mu: no run is added to wg after this
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	grace := time.NewTimer(r.opts.StopGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
	case <-ctx.Done():
	}
	r.stopAll(errStopping)
	<-done
	r.watching.Wait()
	r.opts.Allowlist.Wait()
	if err := r.sched.Shutdown(); err != nil {
		return fmt.Errorf("ingest: unable to stop the scheduler: %w", err)
	}
	return nil
}

// Wait blocks until no run is in flight.
func (r *Runner) Wait() { r.wg.Wait() }

// fetch runs the source into a batch sink and says how it went.
func (r *Runner) fetch(ctx context.Context, f *store.Feed, run *store.FeedRun) (RunStats, outcome) {
	fail := func(err error) (RunStats, outcome) {
		kind := string(ioc.FailureOf(err))
		return RunStats{}, outcome{kind: kind, detail: err.Error(), message: kind}
	}
	cat, ok := r.sources.Lookup(SourceKey(f))
	if !ok {
		return fail(noSourceError(f))
	}
	cfg, err := r.sourceConfig(f)
	if err != nil {
		return fail(err)
	}
	src, err := cat.New(cfg)
	if err != nil {
		return fail(err)
	}
	now := r.opts.Now().UTC()
	req := FetchRequest{Cursor: f.Cursor, Started: run.StartedAt}
	if f.BackfillDays > 0 {
		req.Since = now.AddDate(0, 0, -f.BackfillDays)
	}
	// The run stops at the per-poll limit (what it stores) or at what is
	// left of the daily one (the sightings new to the feed that it stores:
	// re-reporting what the feed has, as an unchanged file run again does,
	// costs none of it), whichever comes first; the run's note says which.
	// The source is told the per-poll limit only: it cannot tell which of
	// its indicators are new.
	req.Limit = cat.RunLimit
	note := func() string { return runLimitNote(cat.RunLimit) }
	pace := newConstantRate(cat.Rate, r.interval(f))
	if pace != nil {
		if req.Limit == 0 || pace.share < req.Limit {
			req.Limit = pace.share
			note = pace.note
		}
	}
	var addLimit int64
	var resumeAt time.Time
	if cat.DailyLimit > 0 {
		day := now.Truncate(24 * time.Hour)
		resumeAt = day.Add(24 * time.Hour)
		used, err := r.st.AddedSince(ctx, f.ID, day)
		if err != nil {
			return fail(err)
		}
		addLimit = cat.DailyLimit - used
		if addLimit <= 0 {
			return RunStats{}, outcome{message: f.SuccessMessage(),
				note: limitNote(cat.DailyLimit, resumeAt)}
		}
	}
	// Which limit ended the run: the sink tells by its counts.
	endNote := func(s RunStats) string {
		if addLimit > 0 && s.Added >= addLimit {
			return limitNote(cat.DailyLimit, resumeAt)
		}
		return note()
	}
	var lastFeedEvent time.Time
	sink := NewBatchSink(r.st, f.ID, run.ID, BatchOptions{
		BatchSize: r.opts.BatchSize,
		Limit:     req.Limit,
		AddLimit:  addLimit,
		Retention: time.Duration(f.RetentionPeriod) * 24 * time.Hour,
		Now:       r.opts.Now,
		Allowlist: r.opts.Allowlist,
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
	lists := &completeLists{}
	download := r.downloadProgress(f.ID, run.ID, sink)
	cursor, err := src.Fetch(ctx, req, &safeSink{Sink: sink, stopping: &r.stopping, lists: lists,
		downloaded: download.report, pace: pace})
	download.end()
	unchanged := errors.Is(err, ioc.ErrUnchanged)
	if unchanged {
		err = nil
	}
	limitHit := errors.Is(err, ErrLimitReached) || pace != nil && errors.Is(err, ioc.ErrPaceReached)
	if capped := (*RunCapped)(nil); errors.As(err, &capped) {
		limitHit, note = true, func() string { return capped.Note }
		endNote = func(RunStats) string { return capped.Note }
	}
	if err == nil {
		// Sources that do not checkpoint their final cursor get it saved here.
		err = sink.Checkpoint(ctx, cursor)
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
	bl := pace.backlog(r.opts.Now())
	if limitHit || (err == nil && stats.LimitReached) {
		o := outcome{message: f.SuccessMessage(), backlog: bl}
		if cursor != "" { // the limit was used up before the end of the source
			o.note = endNote(stats)
		}
		// The lists read to their end before the limit was reached are
		// complete all the same (a source never names one it read in part).
		o.note = joinNotes(o.note, r.expireLists(ctx, f, run, lists.list()))
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
			o.note = r.expireLists(ctx, f, run, lists.list())
		}
		return stats, o
	}
	o := failedOutcome(ctx, err, fail)
	o.backlog = bl
	if settleErr != nil && o.message != store.MessageDisabled {
		r.log.Error("Unable to write what came before the run's last checkpoint", "feed_id", f.ID, "run_id", run.ID, "error", ioc.MaskURLs(settleErr.Error()))
		o.detail += "; what came before the last checkpoint was not written either (" + settleErr.Error() + "): the next run fetches it again"
	} else if partial := (*ioc.PartialFailure)(nil); errors.As(err, &partial) && o.kind != store.MessageStopped {
		// The sub-requests that worked were stored; the lists among them
		// read whole expire what they dropped, as in a successful run.
		o.note = r.expireLists(ctx, f, run, lists.list())
	}
	return stats, o
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
func failedOutcome(ctx context.Context, err error, fail func(error) (RunStats, outcome)) outcome {
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
	_, o := fail(err)
	return o
}

func runLimitNote(limit int64) string {
	return fmt.Sprintf("limit of %d IoCs per poll reached; the rest comes with the next poll", limit)
}

func limitNote(limit int64, resumeAt time.Time) string {
	return fmt.Sprintf("daily limit of %d IoCs reached; the rest waits until %s",
		limit, resumeAt.Format(time.RFC3339))
}

// safeSink makes a stopping runner end runs at a safe point: the first
// checkpoint after Stop, once its batch is written, fails with errStopping.
type safeSink struct {
	ioc.Sink
	stopping   *atomic.Bool
	lists      *completeLists // snapshot lists read whole; see snapshot.go
	downloaded func(read, total int64)
	pace       *constantRate // nil unless the kind writes at a constant rate
}

// Indicator hands ind on. For a constant-rate kind the limit of the run is
// its share of the rate: the source is told so by ioc.ErrPaceReached.
func (s *safeSink) Indicator(ctx context.Context, ind ioc.Indicator) error {
	err := s.Sink.Indicator(ctx, ind)
	if s.pace != nil && errors.Is(err, ErrLimitReached) {
		return fmt.Errorf("%w: %w", ioc.ErrPaceReached, err)
	}
	return err
}

// Backlog records how far a constant-rate source is (ioc.BacklogSink).
func (s *safeSink) Backlog(written, total int64) {
	if s.pace != nil {
		s.pace.report(written, total)
	}
}

// Downloaded reports a download's progress (ioc.ProgressSink).
func (s *safeSink) Downloaded(read, total int64) {
	if s.downloaded != nil {
		s.downloaded(read, total)
	}
}

// downloadProgressEvery is the least time between two progress events of a
// download.
const downloadProgressEvery = time.Second

// downloadReporter publishes a run's download progress: the first report
// at once, then at most one a second, so that subscribers see the run move
// while it downloads, before anything is parsed. A report held back by that
// pace is published when the second is over, and the report of the whole
// download at once: the last event of a download shows where it ended
// (its total, when the server sent one), not where the pace last let one
// through.
type downloadReporter struct {
	bus           *events.Bus
	feedID, runID int64
	sink          *BatchSink

	mu          sync.Mutex
	read, total int64 // the latest report
	shown       int64 // read, as last published
	shownAt     time.Time
	trailing    *time.Timer // publishes a held-back report
	ended       bool
}

func (r *Runner) downloadProgress(feedID, runID int64, sink *BatchSink) *downloadReporter {
	return &downloadReporter{bus: r.bus, feedID: feedID, runID: runID, sink: sink}
}

// report takes a download's progress (ioc.ProgressSink).
func (d *downloadReporter) report(read, total int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return
	}
	d.read, d.total = read, total
	now := time.Now()
	whole := total > 0 && read >= total
	if d.shownAt.IsZero() || whole || now.Sub(d.shownAt) >= downloadProgressEvery {
		d.publishLocked(now)
		return
	}
	if d.trailing == nil {
		d.trailing = time.AfterFunc(downloadProgressEvery-now.Sub(d.shownAt), d.publishHeldBack)
	}
}

func (d *downloadReporter) publishHeldBack() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.trailing = nil
	if !d.ended && d.read != d.shown {
		d.publishLocked(time.Now())
	}
}

// end publishes a report still held back, before the run's final event,
// and stops the reporting.
func (d *downloadReporter) end() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.trailing != nil {
		d.trailing.Stop()
		d.trailing = nil
	}
	if !d.ended && d.read != d.shown {
		d.publishLocked(time.Now())
	}
	d.ended = true
}

func (d *downloadReporter) publishLocked(now time.Time) {
	if d.trailing != nil {
		d.trailing.Stop()
		d.trailing = nil
	}
	d.shown, d.shownAt = d.read, now
	s := d.sink.Stats()
	d.bus.Publish(events.Event{FeedID: d.feedID, Progress: &events.Progress{FeedID: d.feedID, RunID: d.runID,
		Fetched: s.Fetched, Stored: s.Stored, Rejected: s.Rejected, Downloaded: d.read, DownloadTotal: d.total}})
}

func (s *safeSink) Checkpoint(ctx context.Context, cursor string) error {
	if err := s.Sink.Checkpoint(ctx, cursor); err != nil {
		return err
	}
	if s.stopping.Load() {
		return errStopping
	}
	return nil
}
