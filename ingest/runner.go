package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"

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

// The run history a feed keeps: runs that ended more than RunHistoryAge
// ago are deleted by the sweeper, except each feed's newest RunHistoryKeep.
const (
	RunHistoryAge  = 90 * 24 * time.Hour
	RunHistoryKeep = 50
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
	Bus     *Bus
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
	// PremiumEndpointBase, when set, is where every feed-list platform
	// endpoint must point ({premium_endpoint_base} of the spec).
	PremiumEndpointBase string
	// Allowlist drops benign indicators before they are stored; one over
	// Store and Bus when nil.
	Allowlist *Allowlist
	// KeyIndexInterval is how often the key indexer looks for quiet to
	// bring the IoC key tables up to date (store.KeyIndexer).
	KeyIndexInterval time.Duration
}

// Runner schedules and runs the feeds and carries out the feed changes of
// the API that affect ingestion.
type Runner struct {
	st      *store.Store
	secrets *store.Secrets
	bus     *Bus
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
		o.Bus = NewBus()
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
		st: o.Store, secrets: o.Secrets, bus: o.Bus, sources: o.Sources, log: o.Log, opts: o,
		sched: sched, base: base, stopAll: cancel,
		jobs: map[int64]feedJob{}, running: map[int64]*activeRun{},
	}, nil
}

// Bus returns the bus the runner publishes on.
func (r *Runner) Bus() *Bus { return r.bus }

// Allowlist returns the allowlist ingestion applies.
func (r *Runner) Allowlist() *Allowlist { return r.opts.Allowlist }

// Sources returns the registry of sources.
func (r *Runner) Sources() *Registry { return r.sources }

func jobName(feedID int64) string { return "feed:" + strconv.FormatInt(feedID, 10) }

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
	feeds, err := r.st.EnabledFeeds(ctx)
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

func (r *Runner) interval(f *store.Feed) time.Duration {
	if f.Type == store.FeedBuiltin {
		return store.BuiltinPollingHours * time.Hour
	}
	return time.Duration(f.PollingFrequency) * time.Hour
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
		r.goRun(f.ID)
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
	r.goRunAs(f.ID, runResume)
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
		gocron.NewTask(func() { r.runFeed(feedID, runScheduled) }),
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
	f, err := r.st.Feed(ctx, feedID)
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
	feeds, err := r.st.EnabledFeeds(ctx)
	if err != nil {
		return err
	}
	_, err = r.reconcileWith(gen, feeds)
	// A run here of a feed disabled or deleted elsewhere stops too, as it
	// would had that been done here. The feed is read again first: it may
	// have been enabled since the list was read, and this run started.
	for _, id := range r.runningNotIn(feeds) {
		f, ferr := r.st.Feed(ctx, id)
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
	run, err := r.st.StartRun(ctx, f.ID, start)
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
	if cur, err := r.st.Feed(ctx, f.ID); err == nil {
		r.bus.publishFeed(cur)
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
		r.bus.publishFeed(after)
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
	r.bus.publishFeed(after)
	if out.kind != "" && out.kind != store.MessageStopped {
		log.Warn("Feed run failed", "count", run.Stored, "error", run.ErrorDetail)
	} else {
		log.Info("Feed run ended", "count", run.Stored, "note", run.Note)
	}
}

// publishEnd publishes the final progress event of run, ended as kind.
func (r *Runner) publishEnd(run *store.FeedRun, kind string) {
	r.bus.Publish(Event{FeedID: run.FeedID, Progress: &Progress{FeedID: run.FeedID, RunID: run.ID,
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
		after, err := r.st.FinishRun(ctx, run, message)
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

// closeOrphanedRuns closes as Stopped the runs left open by an instance
// that is gone: killed, crashed, or cut from the database (its feed lock,
// held on a connection of its own, is then free). A run of a feed running
// here, or locked by another instance, is going on and is left alone.
// Closing an old run leaves a feed that a newer run changed as that run
// left it (see store.FinishRun). It returns the feeds the closing left
// Stopped, which are to be resumed.
func (r *Runner) closeOrphanedRuns(ctx context.Context) ([]int64, error) {
	runs, err := r.st.UnfinishedRuns(ctx)
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
		unlock, ok, err := r.st.TryLockFeed(ctx, run.FeedID)
		if err != nil {
			return stopped, err
		}
		if !ok {
			continue
		}
		run.ErrorKind = store.MessageStopped
		run.ErrorDetail = "tifeeds stopped during the run"
		run.Note = "interrupted; the next run resumes from the last checkpoint"
		f, err := r.st.FinishRun(ctx, run, store.MessageStopped)
		unlock()
		switch {
		case errors.Is(err, store.ErrRunClosed) || errors.Is(err, store.ErrNotFound):
			continue // it ended (or its feed went) since the list was read
		case err != nil:
			return stopped, err
		}
		r.log.Warn("Closed a run whose instance stopped", "feed_id", run.FeedID, "run_id", run.ID)
		r.publishEnd(run, run.ErrorKind)
		r.bus.publishFeed(f)
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
		r.goRunAs(id, runResume)
	}
}

// sweep deletes expired sightings and the IoCs left without one.
func (r *Runner) sweep(ctx context.Context) {
	sightings, iocs, err := r.st.SweepExpired(ctx, r.opts.Now(), r.opts.SweepBatch)
	if err != nil {
		r.log.Error("Unable to sweep expired indicators", "error", err)
		return
	}
	if sightings > 0 || iocs > 0 {
		r.log.Info("Swept expired indicators", "count", iocs, "sightings", sightings)
	}
	runs, err := r.st.PruneFeedRuns(ctx, r.opts.Now().Add(-RunHistoryAge), RunHistoryKeep)
	if err != nil {
		r.log.Error("Unable to prune the run history", "error", err)
		return
	}
	if runs > 0 {
		r.log.Info("Pruned old feed runs", "count", runs)
	}
}
