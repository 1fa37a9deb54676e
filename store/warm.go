package store

import (
	"context"
	"fmt"
	"os"
	"runtime"
)

// CacheWarmth is what WarmCache did.
type CacheWarmth struct {
	// Size is the database's files' size in bytes; Read what was read of
	// them, the rest having been in memory already.
	Size, Read int64
	// Skipped says why nothing was read, when nothing was.
	Skipped string
}

// WarmCache reads the parts of the SQLite database's files that are not in
// the operating system's page cache, so that the first requests after the
// machine started do not wait for the disk: with the cache cold at
// 10,000,000 IoCs, the first `minScore` page took 1.0 s and the first
// VALUE ASC page 111 ms (14 and 0.7 ms once read). It reads with one
// goroutine, in order, what is not resident (nothing after a restart of
// the process alone) and nothing when the files are larger than half the
// memory available, which they would push out of the cache in turn.
// PostgreSQL keeps its own buffers: pg_prewarm's autoprewarm restores
// them (README, "PostgreSQL"). Nothing on PostgreSQL or ":memory:".
func (s *Store) WarmCache(ctx context.Context) (CacheWarmth, error) {
	var w CacheWarmth
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
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		idleIO()
		for _, name := range files {
			read, err := warmFile(ctx, name)
			w.Read += read
			if err != nil {
				done <- fmt.Errorf("store: unable to read %s into memory: %w", name, err)
				return
			}
		}
		done <- nil
	}()
	return w, <-done
}
