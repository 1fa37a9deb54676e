// Command tifeeds-bench measures TSV ingestion (tsv.Read into a BatchSink)
// against the databases' own bulk loaders on the same rows, in the same run:
// the sqlite3 CLI's .import for SQLite and COPY for PostgreSQL (when
// TIFEEDS_TEST_POSTGRES names a server; scripts/with-postgres.sh starts one).
// Each ingestion runs in a child process of this binary so that its peak RSS
// is its own. make bench runs it; docs/benchmarks.md holds the figures.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/internal/background"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

const childArg = "-ingest-child"

// cpuProfileEnv, when set, names the file where each ingesting child writes
// a CPU profile of its ingestion (the last child's survives).
const cpuProfileEnv = "TIFEEDS_BENCH_CPUPROFILE"

// retentionEnv, when set, is the retention (a Go duration) of the IoCs an
// ingesting child writes; 30 days otherwise. make bench-scale ingests the
// IoCs its sweeper then expires with a short one.
const retentionEnv = "TIFEEDS_BENCH_RETENTION"

// keyIndexerEnv, when set, makes an ingesting child run the key indexer
// beside its run on the same store, as the service's runner does: on
// SQLite the indexer's chunks and the batches then queue for the one
// writing connection in turn. Run from another process, the indexer lost
// the file lock to the batches (SQLite's busy handler sleeps and retries)
// and fell a run behind. make bench-scale sets it.
const keyIndexerEnv = "TIFEEDS_BENCH_KEY_INDEXER"

// rareTagEnv, when set, makes an ingesting child add rareTag to every
// hundredth indicator, through the writer like any feed's tags (the TSV
// gives every IoC the same one). The stores whose reads are measured are
// built with it: tagged afterwards by one UPDATE outside the writers, 1%
// of 10,000,000 IoCs were changed since their keys when the server
// restarted, a debt no service makes.
const rareTagEnv = "TIFEEDS_BENCH_RARE_TAG"

// rareTagging adds rareTag to every hundredth indicator on its way to the
// sink.
type rareTagging struct {
	source.Sink
	n int
}

func (r *rareTagging) Indicator(ctx context.Context, ind ioc.Indicator) error {
	if r.n%100 == 3 {
		ind.Tags = append(slices.Clip(ind.Tags), rareTag)
	}
	r.n++
	return r.Sink.Indicator(ctx, ind)
}

// result is what a child ingestion reports on stdout.
type result struct {
	Lines   int64   `json:"lines"`
	Stored  int64   `json:"stored"`
	Seconds float64 `json:"seconds"`
	MaxRSS  int64   `json:"max_rss"` // bytes: the child's VmHWM (peakRSS), else the parent's rusage of it
	CPU     float64 `json:"-"`       // user + system seconds of the child
	// Indexer is how long the child's key indexer (keyIndexerEnv) ticked,
	// in seconds: on SQLite what it took of the run's writer, and its
	// waits for it.
	Indexer float64 `json:"indexer,omitempty"`
}

// timing is a baseline's wall and CPU time; CPU is 0 when it ran in
// another process than the one timed (PostgreSQL's server).
type timing struct{ Wall, CPU float64 }

func main() {
	log.SetFlags(0)
	if len(os.Args) > 1 && os.Args[1] == childArg {
		if err := child(os.Args[2:]); err != nil {
			log.Fatalf("tifeeds-bench child: %v", err)
		}
		return
	}
	rows := flag.Int("rows", 1_000_000, "rows of the main TSV file")
	bigMB := flag.Int("big-mb", 100, "size in MB of the file ingested for peak RSS only (0 to skip)")
	batch := flag.Int("batch", ingest.DefaultBatchSize, "BatchSink batch size")
	dir := flag.String("dir", "", "working directory (default: a new temporary one, removed at the end)")
	runs := flag.Int("runs", 3, "measurements of each baseline and ingestion, interleaved; the medians are compared")
	only := flag.String("only", "", `"ingest" or "reads" to measure one of the two (default both); "tsv" for the TSV ingestion against the bulk loaders alone; "allowlist" for ingestion with and without the allowlists; "assets" with and without the asset watch, then the latency from a batch's commit to its hits' webhook deliveries (on each -dbs database); "warninglists" for ingestion with the default warninglists and 1,000,000 own entries`)
	parts := flag.String("parts", "exports,taxii,tenant,lookup,overview,pages", "read paths to measure, comma-separated")
	dbs := flag.String("dbs", "sqlite,postgres", "databases whose TSV ingestion and read paths are measured (postgres needs TIFEEDS_TEST_POSTGRES)")
	flag.Parse()
	readParts = map[string]bool{}
	for _, p := range strings.Split(*parts, ",") {
		readParts[strings.TrimSpace(p)] = true
	}
	benchDBs = map[string]bool{}
	for _, d := range strings.Split(*dbs, ",") {
		benchDBs[strings.TrimSpace(d)] = true
	}
	if *runs < 1 {
		log.Fatal("tifeeds-bench: -runs must be at least 1")
	}
	if *only != "" && *only != "ingest" && *only != "tsv" && *only != "reads" && *only != "allowlist" && *only != "assets" && *only != "warninglists" {
		log.Fatal(`tifeeds-bench: -only must be "ingest", "tsv", "reads", "allowlist", "assets" or "warninglists"`)
	}
	if *scaleSizes != "" {
		if *scaleKeep && *dir == "" {
			log.Fatal("tifeeds-bench: -scale-keep needs -dir, where the SQLite database is kept")
		}
		if err := withDir(*dir, func(dir string) error { return runScale(context.Background(), dir, *batch, *runs) }); err != nil {
			log.Fatalf("tifeeds-bench: %v", err)
		}
		return
	}
	if err := run(*rows, *bigMB, *batch, *runs, *dir, *only); err != nil {
		log.Fatalf("tifeeds-bench: %v", err)
	}
}

// withDir calls fn with dir, or with a new temporary directory removed
// after when dir is "".
func withDir(dir string, fn func(dir string) error) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "tifeeds-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	return fn(dir)
}

func run(rows, bigMB, batch, runs int, dir, only string) error {
	return withDir(dir, func(dir string) error { return runIn(rows, bigMB, batch, runs, dir, only) })
}

func runIn(rows, bigMB, batch, runs int, dir, only string) error {
	ctx := context.Background()
	file := filepath.Join(dir, "iocs.tsv")
	size, err := generate(file, rows, 0)
	if err != nil {
		return err
	}
	fmt.Printf("TSV: %d rows, %.1f MB, batch size %d, %d interleaved runs of each side (medians compared)\n\n",
		rows, float64(size)/1e6, batch, runs)
	if only == "tsv" {
		return runTSV(ctx, dir, file, rows, batch, runs)
	}
	if only == "" || only == "allowlist" {
		if err := benchAllowlist(ctx, dir, file, rows, batch, runs); err != nil {
			return err
		}
	}
	if only == "" || only == "assets" {
		if err := benchAssets(ctx, dir, file, rows, batch, runs); err != nil {
			return err
		}
	}
	if only == "" || only == "warninglists" {
		if err := benchWarninglists(ctx, dir, file, rows, batch, runs); err != nil {
			return err
		}
	}
	if only == "" || only == "ingest" {
		if err := runIngest(ctx, dir, file, rows, bigMB, batch, runs); err != nil {
			return err
		}
		if err := benchPremium(ctx, dir); err != nil {
			return err
		}
	}
	if only == "" || only == "reads" {
		err := eachFreshDB(ctx, filepath.Join(dir, "reads.db"), func(name, dsn string) error {
			return runReads(ctx, name, dsn, file, batch, runs)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// runIngest compares TSV ingestion with the databases' bulk loaders, then
// measures the peak RSS of large inputs.
func runIngest(ctx context.Context, dir, file string, rows, bigMB, batch, runs int) error {
	if err := runTSV(ctx, dir, file, rows, batch, runs); err != nil {
		return err
	}

	// Peak RSS on a large file.
	if bigMB > 0 {
		big := filepath.Join(dir, "big.tsv")
		size, err := generate(big, 0, int64(bigMB)<<20)
		if err != nil {
			return err
		}
		ing, err := ingestChild("sqlite:"+filepath.Join(dir, "big.db"), big, batch)
		if err != nil {
			return err
		}
		fmt.Printf("Large file: %.1f MB, %d rows into SQLite in %.1f s (%.0f IoCs/s); peak RSS %.1f MB (target < 150 MB)\n",
			float64(size)/1e6, ing.Stored, ing.Seconds, float64(ing.Stored)/ing.Seconds, mb(ing.MaxRSS))
	}
	return benchFeeds(ctx, dir)
}

// runTSV compares TSV ingestion with the bulk loaders of the -dbs databases.
func runTSV(ctx context.Context, dir, file string, rows, batch, runs int) error {
	if benchDBs["sqlite"] {
		if err := runTSVSQLite(ctx, dir, file, rows, batch, runs); err != nil {
			return err
		}
	}
	if !benchDBs["postgres"] {
		return nil
	}
	// PostgreSQL, each measurement in a database of its own.
	if admin := os.Getenv("TIFEEDS_TEST_POSTGRES"); admin != "" {
		var pgRuns []pair
		for range runs {
			p, err := pgRun(ctx, admin, file, rows, batch)
			if err != nil {
				return err
			}
			pgRuns = append(pgRuns, p)
		}
		report("PostgreSQL", "COPY", 0.40, rows, pgRuns) // issue 14, point 5
	} else {
		fmt.Println("PostgreSQL: skipped (TIFEEDS_TEST_POSTGRES is not set; run through make bench)")
	}
	return nil
}

func runTSVSQLite(ctx context.Context, dir, file string, rows, batch, runs int) error {
	var sqliteRuns []pair
	for range runs {
		base, err := sqliteImport(ctx, dir, file, rows)
		if err != nil {
			return err
		}
		ing, err := ingestChild("sqlite:"+filepath.Join(dir, "ingest.db"), file, batch)
		if err != nil {
			return err
		}
		sqliteRuns = append(sqliteRuns, pair{base, ing})
	}
	report("SQLite", "sqlite3 .import", 0.50, rows, sqliteRuns) // issue 3
	return nil
}

// pair is one measurement of a baseline and of the ingestion after it.
type pair struct {
	base timing
	ing  result
}

// pgRun measures COPY and the ingestion once, each in a fresh database.
func pgRun(ctx context.Context, admin, file string, rows, batch int) (pair, error) {
	dsn, drop, err := freshPostgres(ctx, admin)
	if err != nil {
		return pair{}, err
	}
	defer drop()
	base, err := pgCopy(ctx, dsn, file, rows)
	if err != nil {
		return pair{}, err
	}
	ingDSN, dropIng, err := freshPostgres(ctx, admin)
	if err != nil {
		return pair{}, err
	}
	defer dropIng()
	ing, err := ingestChild(ingDSN, file, batch)
	return pair{base, ing}, err
}

// report prints the medians of the runs and their ratio against target.
// Baseline and ingestion alternate, so a change of load on this shared
// machine touches both sides; the median drops a run that a burst of load spoiled.
func report(db, baseName string, target float64, rows int, runs []pair) {
	var baseWall, ingWall, baseCPU, ingCPU, ratios []float64
	var stored, maxRSS int64
	for _, r := range runs {
		baseWall = append(baseWall, r.base.Wall)
		ingWall = append(ingWall, r.ing.Seconds)
		baseCPU = append(baseCPU, r.base.CPU)
		ingCPU = append(ingCPU, r.ing.CPU)
		ratios = append(ratios, r.base.Wall/r.ing.Seconds*float64(r.ing.Stored)/float64(rows))
		stored, maxRSS = r.ing.Stored, max(maxRSS, r.ing.MaxRSS)
	}
	bw, iw := median(baseWall), median(ingWall)
	baseRate, rate := float64(rows)/bw, float64(stored)/iw
	fmt.Printf("%s (median of %d)\n  baseline %-16s %8.0f rows/s (%.1f s)\n  tifeeds ingest           %8.0f IoCs/s (%.1f s, %d stored)\n"+
		"  ratio                    %8.2f (target >= %.2f; each run: %s)\n",
		db, len(runs), baseName, baseRate, bw, rate, iw, stored, rate/baseRate, target, formatRatios(ratios))
	if bc := median(baseCPU); bc > 0 {
		// CPU time is steadier than wall time on a shared machine.
		ic := median(ingCPU)
		fmt.Printf("  ratio of CPU time        %8.2f (baseline %.1f s, ingest %.1f s of CPU)\n", bc/ic, bc, ic)
	}
	fmt.Printf("  ingest peak RSS          %8.1f MB (target < 150 MB; the highest of the runs)\n\n", mb(maxRSS))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func formatRatios(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(parts, " ")
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// generate writes a TSV file of distinct indicators of every TSV type: rows
// rows, or, when rows is 0, rows of long URLs until the file reaches size
// bytes.
func generate(path string, rows int, size int64) (int64, error) {
	return generateFrom(path, 0, rows, size)
}

// generateFrom is generate starting at the from-th indicator, so that files
// generated one after another hold distinct indicators (make bench-scale's runs).
func generateFrom(path string, from, rows int, size int64) (int64, error) {
	return generateRun(path, from, rows, size, false)
}

// spreadDomainEvery is how many of a run's domain rows one spread domain
// stands for (generateRun): 50 in a run of 500,000.
const spreadDomainEvery = 2000

// generateRun is generateFrom, and with spreadDomains the run's domains
// few and spread over every stored domain's values: one domain row in
// spreadDomainEvery is a domain numbered at random among the store's
// (host-N.example.net beside their host-N.example.com), the others IPs. A
// feed of IPs with a few domains, short-lived: an expiry range's domains
// then lie among millions of other domains (make bench-scale's runs to be
// swept).
func generateRun(path string, from, rows int, size int64, spreadDomains bool) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n int64
	for i := from; rows > 0 && i < from+rows || rows == 0 && n < size; i++ {
		var line string
		src, score := fmt.Sprintf("src_%d", i%13), i%101
		switch {
		case rows == 0:
			line = fmt.Sprintf("url\thttps://files%d.example.net/download/%d/%s/payload.exe?campaign=%d\t%s\t%d\n",
				i%5000, i, strings.Repeat("x", 120), i, src, score)
		case i%5 == 0 && spreadDomains && i/5%spreadDomainEvery == 0:
			// Odd and prime to 10, the factor numbers each i apart below 10^9.
			line = fmt.Sprintf("domain\thost-%d.example.net\t%s\t%d\n", uint64(i)*2654435761%1_000_000_000, src, score)
		case i%5 == 0 && !spreadDomains:
			line = fmt.Sprintf("domain\thost-%d.example.com\t%s\t%d\n", i, src, score)
		case i%5 <= 1:
			line = fmt.Sprintf("ip\t%d.%d.%d.%d\t%s\t%d\n", 11+i>>24&127, i>>16&255, i>>8&255, i&255, src, score)
		case i%5 == 2:
			line = fmt.Sprintf("url\thttp://site-%d.example.org/path/%d?id=%d\t%s\t%d\n", i%10007, i, i, src, score)
		case i%5 == 3:
			line = fmt.Sprintf("sha256-hash\t%064x\t%s\t%d\n", uint64(i)*2654435761, src, score)
		default:
			line = fmt.Sprintf("md5-hash\t%032x\t%s\t%d\n", uint64(i)*40503, src, score)
		}
		m, err := w.WriteString(line)
		if err != nil {
			f.Close()
			return n, err
		}
		n += int64(m)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return n, err
	}
	return n, f.Close()
}

// sqliteImport times the sqlite3 CLI loading the file into a table with the
// same unique index as iocs, with the store's journal settings, in a new
// database.
func sqliteImport(ctx context.Context, dir, file string, rows int) (timing, error) {
	db := filepath.Join(dir, "baseline.db")
	if err := removeDB(db); err != nil {
		return timing{}, err
	}
	return sqliteLoad(ctx, db, file, rows)
}

// sqliteLoad times the sqlite3 CLI adding the file's rows to the baseline
// table of the database at path, created when missing.
func sqliteLoad(ctx context.Context, path, file string, rows int) (timing, error) {
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		return timing{}, errors.New("the sqlite3 command is needed for the baseline: apt-get install sqlite3")
	}
	script := `PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS iocs (type TEXT NOT NULL, value TEXT NOT NULL, source TEXT NOT NULL, score INTEGER NOT NULL, UNIQUE (type, value));
.mode tabs
.import ` + file + ` iocs
SELECT 'loaded ' || total_changes();
`
	cmd := exec.CommandContext(ctx, bin, path)
	cmd.Stdin = strings.NewReader(script)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	secs := time.Since(start).Seconds()
	if err != nil {
		return timing{}, fmt.Errorf("sqlite3 .import: %v: %.500s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("loaded %d\n", rows)) {
		return timing{}, fmt.Errorf("sqlite3 .import did not load %d rows: %.500s", rows, out)
	}
	return timing{Wall: secs, CPU: (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()}, nil
}

// freshPostgres creates a database for the run and returns its DSN.
func freshPostgres(ctx context.Context, admin string) (string, func(), error) {
	db, err := sql.Open("pgx", admin)
	if err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("tifeeds_bench_%d", time.Now().UnixNano())
	if _, err := db.ExecContext(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		db.Close()
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		db.ExecContext(context.Background(), `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
		db.Close()
	}
	return u.String(), drop, nil
}

// pgCopy times COPY of the file into a table with the same unique index as
// iocs, created when missing.
func pgCopy(ctx context.Context, dsn, file string, rows int) (timing, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return timing{}, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS baseline (type TEXT NOT NULL, value TEXT COLLATE "C" NOT NULL,
	source TEXT NOT NULL, score INTEGER NOT NULL, UNIQUE (type, value))`); err != nil {
		return timing{}, err
	}
	f, err := os.Open(file)
	if err != nil {
		return timing{}, err
	}
	defer f.Close()
	start := time.Now()
	tag, err := conn.PgConn().CopyFrom(ctx, f, "COPY baseline FROM STDIN")
	secs := time.Since(start).Seconds()
	if err != nil {
		return timing{}, fmt.Errorf("COPY: %w", err)
	}
	if tag.RowsAffected() != int64(rows) {
		return timing{}, fmt.Errorf("COPY loaded %d rows, want %d", tag.RowsAffected(), rows)
	}
	return timing{Wall: secs}, nil
}

// eachFreshDB calls fn with each -dbs database, empty: SQLite at
// sqlitePath (removed first), then a new PostgreSQL database (when
// TIFEEDS_TEST_POSTGRES is set), dropped once fn returned.
func eachFreshDB(ctx context.Context, sqlitePath string, fn func(name, dsn string) error) error {
	if benchDBs["sqlite"] {
		if err := removeDB(sqlitePath); err != nil {
			return err
		}
		if err := fn("SQLite", "sqlite:"+sqlitePath); err != nil {
			return err
		}
	}
	if admin := os.Getenv("TIFEEDS_TEST_POSTGRES"); admin != "" && benchDBs["postgres"] {
		dsn, drop, err := freshPostgres(ctx, admin)
		if err != nil {
			return err
		}
		defer drop()
		return fn("PostgreSQL", dsn)
	}
	return nil
}

// removeDB removes an SQLite database left by an earlier run in the same
// directory, with its WAL.
func removeDB(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ingestChild runs the ingestion in a child process and reads its peak RSS.
func ingestChild(dsn, file string, batch int) (result, error) {
	return ingestChildEnv(dsn, file, batch, nil)
}

// ingestChildEnv is ingestChild with env added to the child's environment.
func ingestChildEnv(dsn, file string, batch int, env []string) (result, error) {
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		if err := removeDB(path); err != nil {
			return result{}, err
		}
	}
	return ingestChildInto(dsn, file, batch, env)
}

// ingestChildInto is ingestChildEnv into the store at dsn as it is: the
// IoCs of file are added to those already there.
func ingestChildInto(dsn, file string, batch int, env []string) (result, error) {
	self, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	cmd := exec.Command(self, childArg, dsn, file, fmt.Sprint(batch))
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, fmt.Errorf("ingest child: %w", err)
	}
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("ingest child output %q: %w", out, err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && r.MaxRSS == 0 {
		r.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	r.CPU = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return r, nil
}

// child ingests file into a new feed of the store at dsn, the way a TSV run
// does, and prints a result.
func child(args []string) error {
	if len(args) != 3 {
		return errors.New("usage: " + childArg + " DSN FILE BATCH")
	}
	dsn, file := args[0], args[1]
	var batch int
	fmt.Sscan(args[2], &batch)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	// The feed of an earlier run into the same store, or a new one.
	feed := new(store.Feed)
	if err := st.DB.NewSelect().Model(feed).Where("name = ?", "TSV_bench").Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		now := time.Now()
		feed = &store.Feed{Name: "TSV_bench", Type: store.FeedCustom, Category: "TSV", Enabled: true, StatusMessage: "Running",
			PollingFrequency: 24, RetentionPeriod: 30, CreatedAt: now, UpdatedAt: now}
		if _, err := st.DB.NewInsert().Model(feed).Returning("id").Exec(ctx); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	retention := 30 * 24 * time.Hour
	if v := os.Getenv(retentionEnv); v != "" {
		if retention, err = time.ParseDuration(v); err != nil {
			return fmt.Errorf("%s: %w", retentionEnv, err)
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	allow, err := childAllowlist()
	if err != nil {
		return err
	}
	watch, err := childWatch()
	if err != nil {
		return err
	}
	opts := ingest.BatchOptions{BatchSize: batch, Retention: retention, Allowlist: allow}
	if watch != nil {
		opts.Watch = watch
	}
	sink := ingest.NewBatchSink(st, feed.ID, 0, opts)
	if path := os.Getenv(cpuProfileEnv); path != "" {
		pf, err := os.Create(path)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	stopIndexer := func() time.Duration { return 0 }
	if os.Getenv(keyIndexerEnv) != "" {
		stopIndexer = runKeyIndexer(ctx, st, nil)
	}
	defer func() { stopIndexer() }()
	start := time.Now()
	var to source.Sink = sink
	if os.Getenv(rareTagEnv) != "" {
		to = &rareTagging{Sink: sink}
	}
	// As a feed's run reads (ingest.Runner), at the background's priority.
	var lines int64
	background.Run(func() {
		if lines, err = tsv.Read(ctx, io.Reader(f), to); err == nil {
			err = sink.Flush(ctx)
		}
	})
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	indexer := stopIndexer().Seconds()
	stopIndexer = func() time.Duration { return 0 }
	stats := sink.Stats()
	if stats.Rejected > 0 {
		return fmt.Errorf("%d rows rejected, first: %+v", stats.Rejected, stats.Rejections)
	}
	// The child's own peak: the rusage the parent reads carries the
	// parent's peak across exec (peakRSS), and make bench-scale's parent
	// grows as it serves.
	hwm, err := peakRSS()
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(result{Lines: lines, Stored: stats.Stored, Seconds: secs, MaxRSS: hwm, Indexer: indexer})
}
