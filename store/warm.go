package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/internal/background"
)

// CacheWarmth is what WarmCache did.
type CacheWarmth struct {
	// Size is the database's files' size in bytes; Read what was read of
	// them, the rest having been in memory already.
	Size, Read int64
	// Skipped says why nothing was read, when nothing was.
	Skipped string
	// Connections is how many of PostgreSQL's pool connections it opened
	// and readied.
	Connections int
}

// WarmCache reads the parts of the SQLite database's files that are not in
// the operating system's page cache, so that the first requests after the
// machine started do not wait for the disk: with the cache cold at
// 10,000,000 IoCs, the first `minScore` page took 1.0 s and the first
// VALUE ASC page 111 ms (14 and 0.7 ms once read). It reads in file
// order what is not resident (nothing after a restart of the process
// alone), from one thread in the idle I/O class, resting after each read
// as long as the read took, so that the first requests' own reads still
// go first; and nothing when the files are larger than half the memory
// available, which they would push out of the cache in turn.
// PostgreSQL keeps its own buffers: pg_prewarm's autoprewarm restores
// them (README, "PostgreSQL"); there it readies the pool's first
// connections instead (warmConnections). Nothing on ":memory:".
func (s *Store) WarmCache(ctx context.Context) (CacheWarmth, error) {
	var w CacheWarmth
	if s.Dialect == Postgres {
		var err error
		w.Connections, err = s.warmConnections(ctx)
		return w, err
	}
	if s.path == "" {
		w.Skipped = "no database file"
		return w, nil
	}
	files := []string{s.path, s.path + "-wal"}
	for _, name := range files {
		if fi, err := os.Stat(name); err == nil {
			w.Size += fi.Size()
		}
	}
	available, err := memoryAvailable()
	if err != nil {
		w.Skipped = err.Error()
		return w, nil
	}
	if w.Size > available/2 {
		w.Skipped = fmt.Sprintf("the database's %d MB are more than half the %d MB of memory available", w.Size>>20, available>>20)
		return w, nil
	}
	// On a thread of its own, which ends with the reads, for the idle I/O
	// class it takes.
	background.OnOwnThread(func() {
		idleIO()
		for _, name := range files {
			var f *os.File
			var read int64
			if f, err = s.warmFiles.open(name); err == nil {
				read, err = warmFile(ctx, f)
				w.Read += read
			}
			if err != nil {
				err = fmt.Errorf("store: unable to read %s into memory: %w", name, err)
				return
			}
		}
	})
	return w, err
}

// warmFiles keeps the descriptors WarmCache reads the database's files
// through open until the store's connections are closed: closing any
// descriptor of a file drops every POSIX lock the process holds on it,
// SQLite's SHARED lock on the database included. Another process closing
// the database then takes itself for its last user, checkpoints and
// deletes the WAL under this one's connections: the bench's database was
// found malformed so, after a sqlite3 shell had read it beside a warm-up
// that closed its descriptor (sqlite.org/howtocorrupt.html, 2.2).
type warmFiles struct {
	mu     sync.Mutex
	files  map[string]*os.File
	closed bool
}

// open returns the open descriptor of the file at name, nil when there is
// no such file (the WAL between checkpoints).
func (w *warmFiles) open(name string) (*os.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errors.New("the store is closed")
	}
	if f, ok := w.files[name]; ok {
		return f, nil
	}
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if w.files == nil {
		w.files = map[string]*os.File{}
	}
	w.files[name] = f
	return f, nil
}

func (w *warmFiles) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, f := range w.files {
		f.Close()
	}
	w.files = nil
}

// warmedConnections is how many of PostgreSQL's pool connections
// WarmCache readies: a page takes up to two at once (the race of its two
// ways), and the next requests more. (Four were measured, below, when a
// prefix's count still ran beside the race, three at once.)
const warmedConnections = 4

// warmConnections opens warmedConnections of the pool's connections,
// each held until all are open so that each is one of its own, and has
// each plan a read of iocs, which loads into its backend the table's and
// its indexes' catalog entries and the columns' statistics, as every
// backend does for its first statements on a table. Left to the first
// requests, that cost them: on a fresh process at 10,000,000 IoCs the
// first page of a prefix by first sighting took 49-51 ms, 27-30 with the
// connections readied (readying them took 70-72 ms), and the first page
// in id order 8-10 ms against 4 (docs/benchmarks.md). The pool keeps them
// until they idle for its idle time.
func (s *Store) warmConnections(ctx context.Context) (int, error) {
	var conns []bun.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range warmedConnections {
		c, err := s.DB.Conn(ctx)
		if err != nil {
			return len(conns), fmt.Errorf("store: unable to ready the database's connections: %w", err)
		}
		conns = append(conns, c)
		if _, err := c.ExecContext(ctx, `EXPLAIN SELECT iocs.id FROM iocs WHERE iocs.type = 'domain' AND iocs.value >= 'a'
AND iocs.score >= 0 AND iocs.first_seen >= 0 AND iocs.last_seen >= 0 AND iocs.expires_at >= 0 AND iocs.changed_at >= 0
ORDER BY iocs.first_seen DESC LIMIT 1`); err != nil {
			return len(conns) - 1, fmt.Errorf("store: unable to ready the database's connections: %w", err)
		}
	}
	return len(conns), nil
}
