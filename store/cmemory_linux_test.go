package store_test

import (
	"context"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestReaderRefillsItsCacheInKeptMemory: after another connection
// commits, a SQLite reader drops its page cache and reads the pages again,
// into memory the process kept from the pages it freed rather than memory
// faulted in anew (cmemory.go). With glibc's own thresholds the
// second read of these 1,500 pages faulted 481 times.
func TestReaderRefillsItsCacheInKeptMemory(t *testing.T) {
	s := storetest.NewSQLite(t)
	ctx := context.Background()
	const pages = 1500
	storetest.MustExec(t, s, "CREATE TABLE cache_probe (b BLOB)")
	storetest.MustExec(t, s, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
INSERT INTO cache_probe SELECT randomblob(3000) FROM n`, pages)
	conn, err := store.ReadConn(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// SQLite runs on the calling goroutine's thread (the context never
	// ends), whose faults alone RUSAGE_THREAD counts.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	read := func() (faults int64) {
		t.Helper()
		var before, after unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &before); err != nil {
			t.Fatal(err)
		}
		var total int64
		if err := conn.QueryRowContext(ctx, "SELECT sum(length(b)) FROM cache_probe").Scan(&total); err != nil {
			t.Fatal(err)
		}
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &after); err != nil {
			t.Fatal(err)
		}
		if total < pages*3000 {
			t.Fatalf("read %d bytes of the probe, want %d at least", total, pages*3000)
		}
		return after.Minflt - before.Minflt
	}
	read()
	if warm := read(); warm > pages/10 {
		t.Fatalf("a warm read faulted %d times: the cache did not hold the probe", warm)
	}
	storetest.MustExec(t, s, "INSERT INTO cache_probe VALUES (x'00')")
	if faults := read(); faults > pages/10 {
		t.Errorf("the read after a commit faulted %d times for %d pages, want the memory the cache freed kept", faults, pages)
	}
}
