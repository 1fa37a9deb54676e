package store_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
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
	const pages = 1500
	s, read := newCacheProbe(t, pages)
	read()
	if warm := read(); warm > pages/10 {
		t.Fatalf("a warm read faulted %d times: the cache did not hold the probe", warm)
	}
	storetest.MustExec(t, s, "INSERT INTO cache_probe VALUES (x'00')")
	if faults := read(); faults > pages/10 {
		t.Errorf("the read after a commit faulted %d times for %d pages, want the memory the cache freed kept", faults, pages)
	}
}

// newCacheProbe writes pages pages of blobs into a new SQLite store and
// returns it with read, which reads them all on one reader connection and
// counts the faults of its thread meanwhile. SQLite runs on the calling
// goroutine's thread (the context never ends), whose faults alone
// RUSAGE_THREAD counts: the test's goroutine stays on its thread.
func newCacheProbe(t *testing.T, pages int) (s *store.Store, read func() (faults int64)) {
	t.Helper()
	s = storetest.NewSQLite(t)
	ctx := context.Background()
	storetest.MustExec(t, s, "CREATE TABLE cache_probe (b BLOB)")
	storetest.MustExec(t, s, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
INSERT INTO cache_probe SELECT randomblob(3000) FROM n`, pages)
	conn, err := store.ReadConn(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	return s, func() int64 {
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
		if total < int64(pages)*3000 {
			t.Fatalf("read %d bytes of the probe, want %d at least", total, pages*3000)
		}
		return after.Minflt - before.Minflt
	}
}

// firstReadProbe is set in the environment of the programs that
// TestFirstReadAfterAStartFaultsHugePages starts: they count the faults of
// a first read and print them.
const firstReadProbe = "TIFEEDS_FIRST_READ_PROBE"

// TestFirstReadAfterAStartFaultsHugePages: a process just started reads
// into memory that glibc maps in huge pages (cmemory.go), so a reader's
// first read of 1,500 pages faults a few times rather than once a page.
// The test starts itself again twice, as a user would start tifeeds
// (without GLIBC_TUNABLES) and with glibc.malloc.hugetlb=0, which keeps
// glibc's own pages: that one must fault once a page or so, or the probe
// shows nothing.
func TestFirstReadAfterAStartFaultsHugePages(t *testing.T) {
	const pages = 1500
	if os.Getenv(firstReadProbe) != "" {
		_, read := newCacheProbe(t, pages)
		fmt.Printf("%s=%d\n", firstReadProbe, read())
		return
	}
	if thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || bytes.Contains(thp, []byte("[never]")) {
		t.Skip("the kernel gives no huge pages to glibc's heaps here")
	}
	faults := func(tunables ...string) int {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestFirstReadAfterAStartFaultsHugePages$", "-test.count=1")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GLIBC_TUNABLES=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, firstReadProbe+"=1")
		for _, v := range tunables {
			cmd.Env = append(cmd.Env, "GLIBC_TUNABLES="+v)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the probe failed: %v\n%s", err, out)
		}
		_, after, ok := bytes.Cut(out, []byte(firstReadProbe+"="))
		if !ok {
			t.Fatalf("the probe printed no count:\n%s", out)
		}
		n, err := strconv.Atoi(string(bytes.Fields(after)[0]))
		if err != nil {
			t.Fatalf("the probe's count: %v\n%s", err, out)
		}
		return n
	}
	huge, small := faults(), faults("glibc.malloc.hugetlb=0")
	t.Logf("first read of %d pages: %d faults as started, %d with glibc's own pages", pages, huge, small)
	if small < pages/2 {
		t.Fatalf("with glibc's own pages the first read faulted %d times for %d pages: the probe cannot tell", small, pages)
	}
	if huge > pages/10 {
		t.Errorf("the first read after a start faulted %d times for %d pages, want huge pages", huge, pages)
	}
}
