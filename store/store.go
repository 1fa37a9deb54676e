// Package store keeps tifeeds' data in SQLite or PostgreSQL through bun. It
// knows nothing of HTTP or GraphQL.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // also the "pgx" driver
	"github.com/mattn/go-sqlite3"    // cgo, twice modernc's insert rate (DESIGN.md)
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
)

// Dialect names the database behind a Store.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Store is the handle every package uses to read and write tifeeds' data.
type Store struct {
	DB      *bun.DB
	Dialect Dialect

	// reads is a pool of SQLite connections for reads that must not queue
	// behind the one connection of DB (tenants, IoC pages, exports,
	// lookups); nil when DB serves them (PostgreSQL, ":memory:").
	reads *bun.DB
	// exports is the pool StreamIoCs reads through, apart from DB and
	// reads: an export holds its connection while its client reads, at the
	// client's pace, so a client that stops reading would otherwise keep
	// one of the connections pages and lookups need. nil for ":memory:".
	exports *bun.DB

	// path is the SQLite database file ("" for ":memory:" and PostgreSQL).
	path string
	// warmFiles are the database's files as WarmCache opened them.
	warmFiles warmFiles

	// stopCheckpointer ends the SQLite WAL checkpointer; nil when there is
	// none (PostgreSQL, ":memory:").
	stopCheckpointer func()

	// IoCCountCap bounds the filtered totalCount of IoCs
	// (DefaultIoCCountCap when zero); set it before the first request.
	IoCCountCap int
	// KeyUseFlush is how often recorded API-key use is written
	// (DefaultKeyUseFlush when zero); set it before the first request.
	KeyUseFlush time.Duration
	keyUses     keyUses

	// tenantSQL is Tenant's statement, built once (tenantSQLOnce).
	tenantSQLOnce sync.Once
	tenantSQL     string
	tenantCache   tenantCache

	// KeyLagLimit is how far, in changed IoCs and in new IoCs without a
	// value key, the key tables may lag before a batch pays the difference
	// (when zero, DefaultKeyLagLimit on PostgreSQL, 20,000 on SQLite; see
	// payKeyDebt).
	KeyLagLimit int
	// keysKept says a KeyIndexer keeps this store's key tables: the
	// batches then keep their lag bounded.
	keysKept atomic.Bool

	// writes counts this process's batches and sweeps under way: the key
	// cleaner stops at the first (cleanWhileQuiet).
	writes atomic.Int64

	// changedCount is keyedStamp's last count of the IoCs changed since
	// the keys' stamp.
	changedCount atomic.Pointer[changedCount]

	// pgFreshStreak: the last PostgreSQL batch found none of its IoCs
	// stored, so the next copies its IoCs without looking (pgWriter.insertNew).
	pgFreshStreak atomic.Bool

	// trigrams is the sample of PostgreSQL's value keys searches choose
	// their trigrams by (search_trigrams.go).
	trigrams trigramSampler
	// tail holds the values of the IoCs after PostgreSQL's value keys
	// (search_tail.go).
	tail valueTail

	// overview is Overview's last answer.
	overview overviewCache
}

// Open connects to the database named by dsn: "sqlite:<path>" (":memory:"
// allowed) or "postgres://..." / "postgresql://...". It does not migrate.
func Open(ctx context.Context, dsn string) (*Store, error) {
	var (
		s   *Store
		err error
	)
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		s, err = openSQLite(strings.TrimPrefix(dsn, "sqlite:"))
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		s, err = openPostgres(dsn)
	default:
		return nil, fmt.Errorf("store: unknown database %q: want sqlite:<path> or postgres://...", redact(dsn))
	}
	if err != nil {
		return nil, err
	}
	if err := s.DB.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: unable to reach database %s: %w", redact(dsn), err)
	}
	return s, nil
}

func openSQLite(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: sqlite path is empty")
	}
	if path != ":memory:" {
		if err := createPrivate(path); err != nil {
			return nil, err
		}
	}
	// _txlock=immediate takes the write lock at BEGIN, so two writers queue on
	// the busy timeout instead of failing with SQLITE_BUSY on lock upgrade.
	dsn := "file:" + path + "?_journal_mode=WAL&_busy_timeout=10000&_foreign_keys=on&_synchronous=NORMAL&_txlock=immediate&_stmt_cache_size=64"
	sqldb := sql.OpenDB(newSQLiteConnector(dsn, sqliteWriterCacheKiB))
	// SQLite allows one writer at a time. A single connection serialises
	// writers in Go instead of in lock retries, and keeps ":memory:" one
	// database rather than one per connection.
	sqldb.SetMaxOpenConns(1)
	sqldb.SetConnMaxLifetime(0)
	sqldb.SetConnMaxIdleTime(0)
	if err := requireFTS5(sqldb); err != nil {
		sqldb.Close()
		return nil, err
	}
	s := &Store{DB: bun.NewDB(sqldb, sqlitedialect.New()), Dialect: SQLite, tenantCache: newTenantCache()}
	if path != ":memory:" {
		s.path = path
		s.stopCheckpointer = startCheckpointer(dsn)
		// WAL lets readers run beside each other and the writer; on the
		// one connection, 16 clients getting a tenant queued for it (and
		// behind any write transaction), a quarter of a bare handler's rate.
		// Their transactions are deferred: the writers' BEGIN IMMEDIATE
		// took the write lock for a read transaction (the overview's
		// snapshot), which then waited for a key indexer's chunk (0.8 s)
		// and held off the writers while it read.
		readDSN := strings.Replace(dsn, "_txlock=immediate", "_txlock=deferred", 1)
		reads := sql.OpenDB(newSQLiteConnector(readDSN, sqliteCacheKiB))
		reads.SetMaxOpenConns(sqliteReaders)
		reads.SetMaxIdleConns(sqliteReaders)
		reads.SetConnMaxIdleTime(5 * time.Minute)
		s.reads = bun.NewDB(reads, sqlitedialect.New())
		s.exports = bun.NewDB(exportPool(sql.OpenDB(newSQLiteConnector(readDSN, sqliteCacheKiB))), sqlitedialect.New())
	}
	return s, nil
}

// DefaultExportConns is how many exports may read at once (SetExportConns).
const DefaultExportConns = 4

func exportPool(db *sql.DB) *sql.DB {
	db.SetMaxOpenConns(DefaultExportConns)
	db.SetMaxIdleConns(DefaultExportConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db
}

// SetExportConns sets how many connections exports read through at once;
// more exports wait for one. The server admits no more exports than that.
func (s *Store) SetExportConns(n int) {
	if s.exports != nil && n > 0 {
		s.exports.SetMaxOpenConns(n)
		s.exports.SetMaxIdleConns(n)
	}
}

// exporter is the pool of exports' reads; on ":memory:" there is one
// connection for everything.
func (s *Store) exporter() *bun.DB {
	if s.exports != nil {
		return s.exports
	}
	return s.reader()
}

// requireFTS5 fails unless SQLite was built with FTS5, whose trigram index
// search reads (ioc_value_keys): mattn/go-sqlite3 builds it in only under
// the sqlite_fts5 build tag, which the Makefile sets.
func requireFTS5(db *sql.DB) error {
	var on bool
	if err := db.QueryRow("SELECT sqlite_compileoption_used('ENABLE_FTS5')").Scan(&on); err != nil {
		return fmt.Errorf("store: unable to read SQLite's build options: %w", err)
	}
	if !on {
		return errors.New("store: this tifeeds was built without SQLite's FTS5, which search needs: " +
			"build it with `go build -tags sqlite_fts5` (make does)")
	}
	return nil
}

// sqliteReaders bounds the SQLite read pool: the machine's cores are the
// limit of what more connections give.
const sqliteReaders = 4

// readDB is the pool for reads outside any transaction that may run beside
// the writer: they see what was committed when they start.
func (s *Store) readDB() *sql.DB {
	if s.reads != nil {
		return s.reads.DB
	}
	return s.DB.DB
}

// reader is readDB through bun: IoC pages, counts, exports and lookups,
// which otherwise waited on SQLite for a batch's transaction to commit.
func (s *Store) reader() *bun.DB {
	if s.reads != nil {
		return s.reads
	}
	return s.DB
}

// createPrivate creates the database file, and its directory, readable by
// tifeeds' user alone (0600, 0700), unless they exist: SQLite would create
// the file 0644 under the usual umask, and it gives the -wal and -shm files
// the database file's mode. Existing files and directories keep the mode
// their owner chose.
func createPrivate(path string) error {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("store: unable to create %s: %w", dir, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: unable to create %s: %w", path, err)
	}
	return f.Close()
}

// sqliteBackstopCheckpointPages is the WAL size, in pages of 4 KiB, past
// which a commit on the store's connection checkpoints by itself: only if
// the checkpointer falls behind (or is stopped), since it checkpoints every
// sqliteCheckpointInterval. It bounds the WAL to about 200 MB.
const sqliteBackstopCheckpointPages = 50000

// sqliteCheckpointInterval is how often the checkpointer copies the WAL
// back into the database. A quarter of a second of ingestion is about
// 50,000 IoCs, some 10,000 WAL pages.
const sqliteCheckpointInterval = 250 * time.Millisecond

// startCheckpointer copies the WAL into the database from a connection of
// its own, every sqliteCheckpointInterval, and returns the function that
// stops it. Checkpoints sync the WAL and the database file; done by the
// writer's commits (SQLite's default), those syncs stalled ingestion, which
// runs about 10 % faster with them here (docs/benchmarks.md). A PASSIVE
// checkpoint never waits for the writer or blocks it; one that finds
// nothing to copy costs a few microseconds.
func startCheckpointer(dsn string) (stop func()) {
	db := sql.OpenDB(newSQLiteConnector(dsn, sqliteCacheKiB))
	db.SetMaxOpenConns(1)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(sqliteCheckpointInterval)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				// Errors (a busy database, a full disk) leave the WAL to the
				// next tick or to the writer's backstop; the writer itself
				// reports a failing disk.
				_, _ = checkpoint(context.Background(), db)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		db.Close()
	}
}

// checkpoint runs one PASSIVE checkpoint on db and says how many WAL
// frames it copied.
func checkpoint(ctx context.Context, db *sql.DB) (copied int, err error) {
	var busy, logFrames int
	err = db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &copied)
	return copied, err
}

// sqliteCacheKiB is SQLite's page cache per connection that reads or
// checkpoints (default 2 MiB). Ingestion inserts keys all over the iocs unique index: with the default,
// pages were read back from the OS about 300,000 times per 1,000,000 IoCs;
// 16 MiB took a fifth off the system time (docs/benchmarks.md).
const sqliteCacheKiB = 16 << 10

// sqliteWriterCacheKiB is the page cache of the connection that writes.
// A batch of 20,000 new IoCs touches more pages than 16 MiB hold once the
// store nears 1,000,000 IoCs (the unique index takes keys all over): SQLite
// then spilled dirty pages to the WAL before the commit and read evicted
// ones back, 105,000 more writes and 120,000 more reads per 1,000,000 IoCs
// than with 24 MiB or more (docs/benchmarks.md). 32 MiB leaves room for
// larger stores; peak RSS stays under issue 3's 150 MB.
const sqliteWriterCacheKiB = 32 << 10

// sqliteConnector opens mattn/go-sqlite3 connections to dsn with the
// pragmas a DSN cannot carry. temp_store = MEMORY keeps statement journals
// in memory: a multi-row INSERT keeps one (the pages it changes, to undo it
// alone), which went to a temporary file otherwise.
type sqliteConnector struct {
	dsn string
	drv *sqlite3.SQLiteDriver
}

func newSQLiteConnector(dsn string, cacheKiB int) sqliteConnector {
	return sqliteConnector{dsn: dsn, drv: &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = %d; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -%d",
			sqliteBackstopCheckpointPages, cacheKiB), nil)
		return err
	}}}
}

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }

func (c sqliteConnector) Driver() driver.Driver { return c.drv }

// pagePlanSettings are PostgreSQL settings the store's connections take
// unless the DSN sets them. Every statement of the store's pool is short,
// and a plan the planner costs high (a prefix whose statistics say 100,000
// IoCs, when 2,222 match) went parallel and compiled: the page of such a
// prefix took 24-35 ms with two workers (2-3 ms without them) and 5-17 ms
// more compiling with JIT, 45-61 ms in all on 118 calls of a curve at
// 10,000,000 IoCs. Workers also take the cores that requests and ingest
// share. Exports keep the server's own settings (a whole table, read once).
var pagePlanSettings = map[string]string{"jit": "off", "max_parallel_workers_per_gather": "0"}

func openPostgres(dsn string) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: unable to open postgres: %w", err)
	}
	for name, value := range pagePlanSettings {
		if _, set := cfg.RuntimeParams[name]; !set {
			cfg.RuntimeParams[name] = value
		}
	}
	sqldb := stdlib.OpenDB(*cfg)
	// As many idle as open: with more concurrent requests than idle slots,
	// every query beyond them closed its connection after use and the next
	// one dialled, authenticated and re-prepared anew (pgx caches
	// statements per connection). Idle ones still close after 5 minutes.
	sqldb.SetMaxOpenConns(16)
	sqldb.SetMaxIdleConns(16)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	exports, err := sql.Open("pgx", dsn)
	if err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("store: unable to open postgres: %w", err)
	}
	return &Store{DB: bun.NewDB(sqldb, pgdialect.New()), Dialect: Postgres, tenantCache: newTenantCache(),
		exports: bun.NewDB(exportPool(exports), pgdialect.New())}, nil
}

// Close stops the checkpointer and releases the database connections.
func (s *Store) Close() error {
	s.stopKeyUses()
	s.trigrams.stop()
	s.tail.filling.stop()
	if s.stopCheckpointer != nil {
		s.stopCheckpointer()
		s.stopCheckpointer = nil
	}
	if s.reads != nil {
		s.reads.Close()
	}
	if s.exports != nil {
		s.exports.Close()
	}
	err := s.DB.Close()
	// After SQLite's connections (see warmFiles).
	s.warmFiles.close()
	return err
}

// Pools returns the store's connection pools: the writers' and, on SQLite,
// the readers' and the exports'. A test that needs statements to wait (for
// a request's deadline) takes every connection of each.
func (s *Store) Pools() []*sql.DB {
	pools := []*sql.DB{s.DB.DB}
	for _, p := range []*bun.DB{s.reads, s.exports} {
		if p != nil {
			pools = append(pools, p.DB)
		}
	}
	return pools
}

// Ping checks that the database answers: through the readers' pool, so
// that a readiness probe is not failed while a write holds the writers'.
func (s *Store) Ping(ctx context.Context) error { return s.readDB().PingContext(ctx) }

// RunInTx runs fn in one transaction, committed when fn returns nil.
func (s *Store) RunInTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.DB.RunInTx(ctx, nil, fn)
}

// isUniqueViolation reports whether err is a unique-constraint failure on
// either dialect.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || // sqlite
		strings.Contains(msg, "SQLSTATE 23505") // postgres unique_violation
}

// redact hides the password of a database URL in messages.
func redact(dsn string) string {
	if i := strings.Index(dsn, "://"); i >= 0 {
		if at := strings.LastIndex(dsn, "@"); at > i {
			if colon := strings.Index(dsn[i+3:at], ":"); colon >= 0 {
				return dsn[:i+3+colon] + ":***" + dsn[at:]
			}
		}
	}
	return dsn
}
