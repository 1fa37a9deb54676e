//go:build linux

package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tifeeds/tifeeds/store"
)

// evict drops the file at name from the page cache (its pages clean once
// synced), as a machine's start finds it.
func evict(t *testing.T, name string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

func TestWarmCacheReadsWhatIsNotInMemory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warm.db")
	st, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A file of some megabytes: rows of 4 KB.
	if _, err := st.DB.ExecContext(ctx, `CREATE TABLE filler (b BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
INSERT INTO filler SELECT randomblob(4000) FROM n`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	evict(t, path)
	before, err := store.ResidentShare(path)
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
	if after, err := store.ResidentShare(path); err != nil || after < 0.99 {
		t.Errorf("%.0f%% of the file in memory after (%v)", 100*after, err)
	}
	// What is in memory is not read again.
	if again, err := st.WarmCache(ctx); err != nil || again.Read > again.Size/100 {
		t.Errorf("warmed again: %+v (%v)", again, err)
	}
}

func TestWarmCacheLeavesAFileLargerThanHalfTheMemory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warm.db")
	st, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	store.SetMemoryAvailable(t, 2*fi.Size()-1)
	evict(t, path)
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
