//go:build linux

package store_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// openFile opens a store on a new SQLite file, closed when the test ends.
func openFile(t *testing.T) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "warm.db")
	st, err := store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

func TestWarmCacheReadsWhatIsNotInMemory(t *testing.T) {
	ctx := context.Background()
	st, path := openFile(t)
	// A file of some megabytes: rows of 4 KB.
	if _, err := st.DB.ExecContext(ctx, `CREATE TABLE filler (b BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
INSERT INTO filler SELECT randomblob(4000) FROM n`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	if err := store.Evict(st); err != nil {
		t.Fatal(err)
	}
	before, err := store.ResidentShare(st)
	if err != nil {
		t.Fatal(err)
	}
	if before > 0.5 {
		t.Skipf("the kernel kept %.0f%% of the file in memory after POSIX_FADV_DONTNEED", 100*before)
	}
	w, err := st.WarmCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if w.Skipped != "" || w.Size < fi.Size() || w.Read < fi.Size()/2 || w.Read > w.Size {
		t.Errorf("warmth %+v of a file of %d bytes, %.0f%% of it in memory before", w, fi.Size(), 100*before)
	}
	if after, err := store.ResidentShare(st); err != nil || after < 0.99 {
		t.Errorf("%.0f%% of the file in memory after (%v)", 100*after, err)
	}
	// What is in memory is not read again.
	if again, err := st.WarmCache(ctx); err != nil || again.Read > again.Size/100 {
		t.Errorf("warmed again: %+v (%v)", again, err)
	}
}

func TestWarmCacheLeavesAFileLargerThanHalfTheMemory(t *testing.T) {
	ctx := context.Background()
	st, path := openFile(t)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	store.SetMemoryAvailable(t, 2*fi.Size()-1)
	if err := store.Evict(st); err != nil {
		t.Fatal(err)
	}
	if w, err := st.WarmCache(ctx); err != nil || w.Read != 0 || !strings.Contains(w.Skipped, "half the") {
		t.Errorf("warmth %+v (%v), want it skipped", w, err)
	}
	memory, err := store.Open(ctx, "sqlite::memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer memory.Close()
	if w, err := memory.WarmCache(ctx); err != nil || w.Read != 0 || w.Skipped == "" {
		t.Errorf("warmth of :memory: %+v (%v)", w, err)
	}
}

// lockCheckEnv names the database whose SQLite SHARED lock the helper
// process of TestWarmCacheKeepsSQLitesLocks looks for.
const lockCheckEnv = "TIFEEDS_TEST_LOCK_CHECK"

// WarmCache must not drop SQLite's locks: closing any descriptor of a file
// drops every POSIX lock the process holds on it, SQLite's SHARED lock on
// the database included, and another process closing the database then
// takes itself for its last user, checkpoints and deletes the WAL under
// this one's connections (sqlite.org/howtocorrupt.html, 2.2). The bench's
// database was found malformed so, after a sqlite3 shell had read it.
func TestWarmCacheKeepsSQLitesLocks(t *testing.T) {
	ctx := context.Background()
	if path := os.Getenv(lockCheckEnv); path != "" {
		// The other process: is the byte range of SQLite's SHARED locks
		// held by anyone?
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		const sharedFirst, sharedSize = 0x40000002, 510
		lock := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: sharedFirst, Len: sharedSize}
		if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lock); err != nil {
			t.Fatal(err)
		}
		if lock.Type == unix.F_UNLCK {
			t.Fatal("no process holds a SHARED lock on the database")
		}
		return
	}
	st, path := openFile(t)
	var n int
	if err := st.DB.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		t.Fatal(err)
	}
	held := func(when string) {
		t.Helper()
		other := exec.Command(os.Args[0], "-test.run=^TestWarmCacheKeepsSQLitesLocks$")
		other.Env = append(os.Environ(), lockCheckEnv+"="+path)
		if out, err := other.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", when, err, out)
		}
	}
	held("before WarmCache")
	if _, err := st.WarmCache(ctx); err != nil {
		t.Fatal(err)
	}
	held("after WarmCache")
}

// On PostgreSQL WarmCache readies the pool's first connections, each a
// backend of its own that has planned a read of iocs, and the pool keeps
// them for the first requests.
func TestWarmCacheReadiesPostgresConnections(t *testing.T) {
	s := storetest.NewPostgres(t)
	sent := recordStatements(s)
	w, err := s.WarmCache(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.Connections != 4 {
		t.Errorf("readied %d connections, want 4", w.Connections)
	}
	planned := 0
	for _, q := range sent() {
		if strings.HasPrefix(q, "EXPLAIN SELECT iocs.id FROM iocs") {
			planned++
		}
	}
	if planned != 4 {
		t.Errorf("planned a read of iocs %d times, want 4", planned)
	}
	if st := s.DB.Stats(); st.Idle < 4 {
		t.Errorf("the pool keeps %d idle connections (%d open), want 4 or more", st.Idle, st.OpenConnections)
	}
}
