package main

// make bench-scale (issue 29, point 5): the growth curve. One database is
// built up through the product's ingest path (tsv.Read into a BatchSink,
// the writer every feed kind shares) in runs of -scale-run new IoCs, each in
// a child process whose peak RSS is its own, and at each size of -scale
// every read path of make bench is measured, each against the database's own
// baseline in the same run: right after a restart, quiet (the key tables
// caught up), during an ingest of -scale-run new IoCs, and while the
// sweeper expires -scale-sweep IoCs at once; the service's key indexer runs
// beside it all (runKeyIndexer). With -scale-keep the database
// stays for the next invocation, which starts from the IoCs it holds.

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tifeeds/tifeeds/store"
)

var (
	scaleSizes = flag.String("scale", "", `sizes in IoCs to build and measure at, ascending and comma-separated (e.g. "1000000,3000000,10000000"); set, it runs the growth curve alone`)
	scaleRun   = flag.Int("scale-run", 500_000, "new IoCs of each ingest run building the database, and of the run measured during")
	scaleSweep = flag.Int("scale-sweep", 1_000_000, "IoCs the sweeper expires at once at each size (at least -scale-run)")
	scaleKeep  = flag.Bool("scale-keep", false, "keep the built databases and their baselines (SQLite in -dir, PostgreSQL as "+scalePostgresDB+" and "+scalePostgresDB+"_baseline) for the next run, which starts from what they hold")
)

// scalePostgresDB is the PostgreSQL database -scale-keep keeps.
const scalePostgresDB = "tifeeds_bench_scale"

// shortRetention is the retention of the IoCs the sweeper expires: they
// are swept as if that long had passed, the database's others (30 days)
// staying.
const shortRetention = time.Hour

// parseSizes reads -scale: positive sizes, strictly ascending.
func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		f = strings.ReplaceAll(strings.TrimSpace(f), "_", "")
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-scale: %q is not a positive number of IoCs", f)
		}
		if len(sizes) > 0 && n <= sizes[len(sizes)-1] {
			return nil, fmt.Errorf("-scale: sizes must ascend (%d after %d)", n, sizes[len(sizes)-1])
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// runsTo returns the ingest runs that take a database of have IoCs to
// size: runs of run IoCs, the last one what remains; none when it holds
// size already.
func runsTo(have, size, run int) []int {
	var runs []int
	for have < size {
		n := min(run, size-have)
		runs = append(runs, n)
		have += n
	}
	return runs
}

// runScale builds and measures each -dbs database at each size.
func runScale(ctx context.Context, dir string, batch, runs int) error {
	sizes, err := parseSizes(*scaleSizes)
	if err != nil {
		return err
	}
	if *scaleRun <= 0 {
		return errors.New("-scale-run must be positive")
	}
	fmt.Printf("Growth curve: sizes %v, ingest runs of %d, the sweeper expiring %d at once, %d interleaved runs of each read measurement\n\n",
		sizes, *scaleRun, max(*scaleSweep, *scaleRun), runs)
	if benchDBs["sqlite"] {
		if err := scaleDB(ctx, "SQLite", "sqlite:"+filepath.Join(dir, "scale.db"), "", dir, sizes, batch, runs); err != nil {
			return err
		}
	}
	if !benchDBs["postgres"] {
		return nil
	}
	admin := os.Getenv("TIFEEDS_TEST_POSTGRES")
	if admin == "" {
		fmt.Println("PostgreSQL: skipped (TIFEEDS_TEST_POSTGRES is not set; run through make bench-scale)")
		return nil
	}
	// The store and its baseline, each in a database of its own: the
	// store's size is measured as its database's.
	var dsns [2]string
	for i, name := range []string{scalePostgresDB, scalePostgresDB + "_baseline"} {
		if *scaleKeep {
			if dsns[i], err = keptPostgres(ctx, admin, name); err != nil {
				return err
			}
			continue
		}
		var drop func()
		if dsns[i], drop, err = freshPostgres(ctx, admin); err != nil {
			return err
		}
		defer drop()
	}
	return scaleDB(ctx, "PostgreSQL", dsns[0], dsns[1], dir, sizes, batch, runs)
}

// keptPostgres returns the DSN of database name, created when missing.
func keptPostgres(ctx context.Context, admin, name string) (string, error) {
	db, err := sql.Open("pgx", admin)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := db.ExecContext(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
			return "", fmt.Errorf("create database: %w", err)
		}
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// scaleIngest is the ingest runs of one database, numbered across sizes.
type scaleIngest struct {
	dsn, dir   string
	batch      int
	next       int     // the next indicator generateFrom writes
	first      float64 // the first run's rate, IoCs/s
	last       float64 // the last run's rate, IoCs/s
	n          int
	peakRSS    int64
	short      bool // the next run's IoCs have shortRetention and spread domains (generateRun)
	base       *baselineLoad
	background chan scaleRunResult
	busy       atomic.Bool
}

type scaleRunResult struct {
	err error
	end time.Time
}

// baselineLoad is the database's own load of each run's rows (sqlite3
// .import, COPY) into a table of its own beside the store, with iocs'
// unique index: it grows with the store, so that each run's rate has the
// database's own at the same size beside it, and a slowdown with size is
// told apart from the database's.
type baselineLoad struct {
	what        string
	load        func(ctx context.Context, file string, rows int) (timing, error)
	rows        int     // the table's rows
	first, last float64 // rows/s
}

// newBaselineLoad returns the baseline of a store: on SQLite a database
// file in dir, on PostgreSQL a table in the database at baseDSN, kept with
// the store. fresh empties it first, for a store built from nothing.
func newBaselineLoad(ctx context.Context, baseDSN, dir string, fresh bool) (*baselineLoad, error) {
	if baseDSN == "" {
		path := filepath.Join(dir, "scale-baseline.db")
		if fresh || !*scaleKeep {
			if err := removeDB(path); err != nil {
				return nil, err
			}
		}
		b := &baselineLoad{what: "sqlite3 .import", load: func(ctx context.Context, file string, rows int) (timing, error) {
			return sqliteLoad(ctx, path, file, rows)
		}}
		if _, err := os.Stat(path); err == nil {
			db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
			if err != nil {
				return nil, err
			}
			defer db.Close()
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM iocs").Scan(&b.rows); err != nil {
				return nil, fmt.Errorf("the kept baseline %s: %w", path, err)
			}
		}
		return b, nil
	}
	db, err := sql.Open("pgx", baseDSN)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if fresh {
		if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS baseline"); err != nil {
			return nil, err
		}
	}
	b := &baselineLoad{what: "COPY", load: func(ctx context.Context, file string, rows int) (timing, error) {
		return pgCopy(ctx, baseDSN, file, rows)
	}}
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT to_regclass('baseline') IS NOT NULL").Scan(&exists); err != nil || !exists {
		return b, err
	}
	return b, db.QueryRowContext(ctx, "SELECT count(*) FROM baseline").Scan(&b.rows)
}

// ingest adds rows new IoCs through a child process and prints its rate
// beside the first run's and beside the database's own load.
func (in *scaleIngest) ingest(rows int, why string) (result, error) {
	r, err := in.child(rows)
	if err != nil {
		return r, err
	}
	return r, in.compare(r, why)
}

// child generates rows new IoCs and has an ingest child store them;
// running says so meanwhile.
func (in *scaleIngest) child(rows int) (result, error) {
	in.busy.Store(true)
	defer in.busy.Store(false)
	file := in.runFile()
	if _, err := generateRun(file, in.next, rows, 0, in.short); err != nil {
		return result{}, err
	}
	in.next += rows
	env := []string{keyIndexerEnv + "=1", rareTagEnv + "=1"}
	if in.short {
		env = append(env, retentionEnv+"="+shortRetention.String())
	}
	// Each timed load starts with no dirty pages left by the one before:
	// the kernel's writeback of a baseline's 500,000 rows slowed the next
	// ingest run.
	syscall.Sync()
	r, err := ingestChildInto(in.dsn, file, in.batch, env)
	if err != nil {
		return r, err
	}
	if int(r.Stored) != rows {
		return r, fmt.Errorf("ingest run stored %d of %d new IoCs", r.Stored, rows)
	}
	return r, nil
}

func (in *scaleIngest) runFile() string { return filepath.Join(in.dir, "scale-run.tsv") }

// compare loads the run's rows into the baseline and prints both rates.
func (in *scaleIngest) compare(r result, why string) error {
	// Rows of its own, numbered on from what it holds: a kept store's next
	// run writes again the values its sweep removed, which the baseline,
	// never swept, still holds.
	file := filepath.Join(in.dir, "scale-baseline-run.tsv")
	if _, err := generateFrom(file, in.base.rows, int(r.Stored), 0); err != nil {
		return err
	}
	syscall.Sync()
	t, err := in.base.load(context.Background(), file, int(r.Stored))
	if err != nil {
		return fmt.Errorf("%s of an ingest run's rows: %w", in.base.what, err)
	}
	in.base.rows += int(r.Stored)
	baseRate := float64(r.Stored) / t.Wall
	if in.base.first == 0 {
		in.base.first = baseRate
	}
	in.base.last = baseRate
	in.n++
	rate := float64(r.Stored) / r.Seconds
	if in.first == 0 {
		in.first = rate
	}
	in.last = rate
	in.peakRSS = max(in.peakRSS, r.MaxRSS)
	fmt.Printf("  run %3d %-22s %8d IoCs in %6.1f s: %8.0f IoCs/s, %.2f of the first run; key indexer ticks %4.1f s; peak RSS %6.1f MB\n",
		in.n, why, r.Stored, r.Seconds, rate, rate/in.first, r.Indexer, mb(r.MaxRSS))
	fmt.Printf("          %s of as many such rows into a table of %d: %8.0f rows/s, %.2f of its first run\n",
		in.base.what, in.base.rows, baseRate, baseRate/in.base.first)
	return nil
}

// start runs ingest in the background; running says whether its ingest
// child still does (the baseline's load comes after, outside the reads
// measured meanwhile), wait returns its result.
func (in *scaleIngest) start(rows int, why string) {
	in.background = make(chan scaleRunResult, 1)
	in.busy.Store(true)
	go func() {
		r, err := in.child(rows)
		end := time.Now()
		if err == nil {
			err = in.compare(r, why)
		}
		in.background <- scaleRunResult{err, end}
	}()
}

func (in *scaleIngest) running() bool { return in.busy.Load() }

func (in *scaleIngest) wait() (end time.Time, err error) {
	r := <-in.background
	return r.end, r.err
}

// scaleDB builds one database size by size and measures it at each.
// baseDSN is the database of the baseline's table on PostgreSQL, "" on SQLite.
func scaleDB(ctx context.Context, name, dsn, baseDSN, dir string, sizes []int, batch, runs int) error {
	if !*scaleKeep {
		if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
			if err := removeDB(path); err != nil {
				return err
			}
			defer removeDB(path)
			defer removeDB(filepath.Join(dir, "scale-baseline.db"))
		}
	}
	have, next, err := scaleCount(ctx, dsn)
	if err != nil {
		return err
	}
	base, err := newBaselineLoad(ctx, baseDSN, dir, have == 0)
	if err != nil {
		return err
	}
	in := &scaleIngest{dsn: dsn, dir: dir, batch: batch, next: next, base: base}
	fmt.Printf("%s growth curve, starting from %d IoCs\n", name, have)
	sweep := max(*scaleSweep, *scaleRun)
	for _, size := range sizes {
		if have > size {
			// A kept database past this size: its figures are not this size's.
			fmt.Printf("%s: holds %d IoCs already, more than %d: that size is not measured\n", name, have, size)
			continue
		}
		fmt.Printf("%s: building %d IoCs\n", name, size)
		build := runsTo(have, size, *scaleRun)
		for _, rows := range build {
			if _, err := in.ingest(rows, "building"); err != nil {
				return err
			}
			have += rows
		}
		if len(build) > 0 {
			fmt.Printf("%s at %d: the run that crossed it %.0f IoCs/s, %.2f of the first run's; %s of as many such rows %.2f of its first run's (tifeeds against the database's own load: %.2f of the first run's)\n",
				name, size, in.last, in.last/in.first, base.what, base.last/base.first, (in.last/base.last)/(in.first/base.first))
		}
		if err := scaleMeasure(ctx, name, dsn, size, in, sweep, runs); err != nil {
			return fmt.Errorf("%s at %d IoCs: %w", name, size, err)
		}
	}
	fmt.Printf("%s: peak RSS of the ingest runs %.1f MB; of this process (server and clients) %.1f MB\n\n", name, mb(in.peakRSS), mb(selfMaxRSS()))
	return nil
}

// runKeyIndexer ticks a key indexer on st every second, as the runner
// does, but while paused says so, until stop, which returns how long its
// ticks took in all: on SQLite what it had of an ingest run's writer, and
// its waits for it.
func runKeyIndexer(ctx context.Context, st *store.Store, paused func() bool) (stop func() time.Duration) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan time.Duration, 1)
	go func() {
		var busy time.Duration
		defer func() { done <- busy }()
		k := &store.KeyIndexer{Store: st}
		k.Keep() // as the service's runner does
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if paused != nil && paused() {
					continue
				}
				start := time.Now()
				if err := k.Tick(ctx, now); err != nil && ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "key indexer: %v\n", err)
				}
				busy += time.Since(start)
			}
		}
	}()
	return func() time.Duration { cancel(); return <-done }
}

// scaleCount returns the IoCs the store at dsn holds and the next
// indicator number a run writes (its IoCs' highest id: every indicator
// written before has a lower one).
func scaleCount(ctx context.Context, dsn string) (count, next int, err error) {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return 0, 0, err
	}
	if err := st.DB.NewRaw("SELECT count(*), coalesce(max(id), 0) FROM iocs").Scan(ctx, &count, &next); err != nil {
		return 0, 0, err
	}
	return count, next, nil
}

// scaleMeasure measures the read paths of the database at one size: right
// after a restart, quiet, during an ingest run and during a sweep.
func scaleMeasure(ctx context.Context, name, dsn string, size int, in *scaleIngest, sweep, runs int) error {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	b := &readBench{name: fmt.Sprintf("%s at %d", name, size), dsn: dsn, st: st, runs: runs}
	defer b.close()
	// As tifeeds serve does before its first request.
	if _, err := st.RefreshStatistics(ctx); err != nil {
		return err
	}
	st.StartSearchSample()
	go st.WarmCache(ctx)
	if err := b.setUp(ctx); err != nil {
		return err
	}
	if err := b.startServer(); err != nil {
		return err
	}
	// The service's key indexer beside the reads, on the measuring store:
	// its chunks and the bench's own catch-ups and sweeps queue for one
	// writing connection, as in the service (from a second connection of
	// this process they starved each other past SQLite's busy timeout).
	// Each ingest run runs its own (keyIndexerEnv), beside its batches as
	// the service's runs do; on SQLite this one waits meanwhile. The
	// service is one process there, its runs and its indexer sharing one
	// writing connection, where the bench's two processes fought for
	// SQLite's lock, whose busy waits are not fair: an ingest run of
	// 500,000 took 103.6 s once at 10,000,000 IoCs (8-11 s otherwise),
	// this indexer failing seven times with "database is locked".
	// PostgreSQL's instances each run an indexer, taking turns.
	stopIndexer := runKeyIndexer(ctx, st, func() bool { return st.Dialect == store.SQLite && in.running() })
	defer func() { stopIndexer() }()
	measurePages := func(when string, busy func() bool, cold bool) error {
		fmt.Printf("%s, %s:\n", b.name, when)
		missed, err := b.pagesWhile(ctx, busy, cold)
		if err != nil {
			return err
		}
		fmt.Printf("  pages over %.0f ms: %d (%s)\n", pageTarget.Seconds()*1e3, len(missed), strings.Join(missed, ", "))
		return nil
	}
	// The server restarted on the built database: the key tables are as
	// the indexer kept them through the runs (a service's, running beside
	// them).
	var ordersBehind, valuesBehind int
	if err := st.DB.QueryRowContext(ctx, `SELECT
	(SELECT count(*) FROM iocs WHERE changed_at > (SELECT stamp FROM ioc_keys_state)),
	(SELECT count(*) FROM iocs WHERE id > (SELECT value_id FROM ioc_keys_state))`).Scan(&ordersBehind, &valuesBehind); err != nil {
		return err
	}
	fmt.Printf("%s: the last run left %d IoCs changed since the order and tag keys, %d without a value key\n",
		b.name, ordersBehind, valuesBehind)
	if err := measurePages("right after a restart, each page's first call (the key indexer running beside, as in the service)", nil, true); err != nil {
		return err
	}
	if err := b.catchUp(ctx); err != nil {
		return err
	}
	if err := b.measure(ctx); err != nil {
		return err
	}

	// An ingest run beside the reads; its IoCs are swept below.
	in.short = true
	defer func() { in.short = false }()
	start := time.Now()
	in.start(*scaleRun, "during the reads")
	pagesErr := measurePages(fmt.Sprintf("during an ingest of %d new IoCs", *scaleRun), in.running, false)
	measured := time.Since(start)
	end, err := in.wait()
	if err != nil {
		return err
	}
	if pagesErr != nil {
		return pagesErr
	}
	overlap("ingest", measured, end.Sub(start))
	if extra := sweep - *scaleRun; extra > 0 {
		if _, err := in.ingest(extra, "to be swept"); err != nil {
			return err
		}
	}
	if err := b.catchUp(ctx); err != nil {
		return err
	}

	// The sweeper expiring them all at once, as if their hour had passed.
	type sweepResult struct {
		iocs int64
		secs float64
		err  error
	}
	done := make(chan sweepResult, 1)
	var sweeping atomic.Bool
	sweeping.Store(true)
	start = time.Now()
	go func() {
		_, iocs, err := b.st.SweepExpired(ctx, time.Now().Add(2*shortRetention), 0)
		sweeping.Store(false)
		done <- sweepResult{iocs, time.Since(start).Seconds(), err}
	}()
	pagesErr = measurePages(fmt.Sprintf("while the sweeper expires %d IoCs", sweep), sweeping.Load, false)
	measured = time.Since(start)
	sw := <-done
	if sw.err != nil {
		return sw.err
	}
	if pagesErr != nil {
		return pagesErr
	}
	overlap("sweep", measured, time.Duration(sw.secs*float64(time.Second)))
	fmt.Printf("  the sweeper expired %d IoCs in %.1f s\n", sw.iocs, sw.secs)
	if sw.iocs != int64(sweep) {
		return fmt.Errorf("the sweeper expired %d IoCs, want %d", sw.iocs, sweep)
	}
	fmt.Printf("%s: peak RSS so far: ingest runs %.1f MB, this process (server and clients) %.1f MB\n",
		b.name, mb(in.peakRSS), mb(selfMaxRSS()))
	bytes, err := dbSize(ctx, b.st)
	if err != nil {
		return err
	}
	fmt.Printf("%s: database %.0f MB, %.0f bytes an IoC (the space of the swept IoCs included)\n\n",
		b.name, float64(bytes)/1e6, float64(bytes)/float64(size))
	return nil
}

// dbSize is the bytes of the store's database: SQLite's pages (the WAL
// left out), PostgreSQL's pg_database_size.
func dbSize(ctx context.Context, st *store.Store) (int64, error) {
	var n int64
	q := "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
	if st.Dialect == store.Postgres {
		q = "SELECT pg_database_size(current_database())"
	}
	err := st.DB.QueryRowContext(ctx, q).Scan(&n)
	return n, err
}

// overlap says how much of the measurement the background work covered:
// the pages were measured for measured, the work ended after took.
func overlap(what string, measured, took time.Duration) {
	if took >= measured {
		fmt.Printf("  (the %s ran through the whole %.1f s of the measurement)\n", what, measured.Seconds())
		return
	}
	fmt.Printf("  (the %s ran through the first %.1f s of the %.1f s of the measurement only)\n", what, took.Seconds(), measured.Seconds())
}

// selfMaxRSS is this process's peak RSS in bytes.
func selfMaxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}
