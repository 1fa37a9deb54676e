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
	// DefaultAuditRetention is how long the audit log keeps a record.
	DefaultAuditRetention = 365 * 24 * time.Hour
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
	// Assets, when set, is told of the stored indicators that cover a
	// tenant's asset (package notify's asset watch).
	Assets AssetWatch
	// AuditRetention is how long the audit log keeps a record: the
	// sweeper deletes older ones. DefaultAuditRetention when zero.
	AuditRetention time.Duration
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
	PruneAuditEvents(ctx context.Context, cutoff time.Time) (int64, error)
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
	// why the run started: a test tells a run its job fired from one a
	// reconcile pass started itself.
	why runReason
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
	if o.AuditRetention <= 0 {
		o.AuditRetention = DefaultAuditRetention
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
	if r.sources != nil {
		r.opts.Allowlist.useClient(r.sources.Client())
	}
	r.opts.Allowlist.Watch(r.base, r.opts.ReconcileInterval)
	// A built-in list that drops and changed since its last removal, and a
	// removal cut short by the last stop, are removed in the background;
	// nothing else is scanned.
	if err := r.opts.Allowlist.StartRemovals(r.base); err != nil {
		return fmt.Errorf("ingest: unable to start the warninglists' removals: %w", err)
	}
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
	keys.Keep() // from the first batch, not from the first tick
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
