package store

// SQLite's memory comes from glibc's allocator, which tifeeds sets up as
// soon as its process is loaded, before the Go runtime starts a thread
// (a constructor: set later, the limit on heaps came after the runtime's
// first threads had each taken a heap of their own).
//
// It keeps the memory SQLite frees for its next use rather than hand it
// back to the system, in one heap. A reader's page cache is
// dropped whole whenever another connection has committed since its last
// read (SQLite's pager cannot tell which pages changed), some five times
// a second during an ingest. Its pages, freed together, went back to the
// system past glibc's trim threshold (128 kB to start with), and reading
// them again faulted each one in anew, which on the benchmarks' virtual
// machine costs 13-26 µs a page: the range of a prefix of 22,222 IoCs,
// 2.4 ms on a warm connection, took 25 ms after a commit (877 faults) and
// 5 ms with the memory kept. Kept in up to 8 heaps a core (glibc's
// default), the memory added up: a reading process peaked at 194-218 MB;
// in one heap a core, at 135-141 MB, against 153-166 with glibc's
// defaults (docs/benchmarks.md); in one heap (below), the growth curve's
// process at 1 M peaked at 174 MB against 191.
//
// The trim threshold keeps 64 MB free at the top of a heap, and the mmap
// threshold (32 MB, glibc's most) leaves a statement's sorter to a heap
// rather than a mapping of its own.
//
// Kept memory serves every read but a connection's first: a process just
// started faults in its readers' page caches a page at a time, and a keyed
// page that sorted the 40,000 IoCs a run left without keys took 60-115 ms
// on its first call after a start, 7-10 ms on the next (SQLite at 1 M and
// 10 M; 3,700 faults). Under the tunable glibc.malloc.hugetlb=1, glibc
// grows its main heap in the kernel's huge pages (2 MB, one fault each; in
// glibc 2.36 not the heaps it maps for other threads, hence the one heap).
// glibc reads tunables from the environment alone, as the process starts,
// so the constructor first starts the program again with that one added to
// GLIBC_TUNABLES, before anything else has run, unless the variable names
// it already (glibc.malloc.hugetlb=0 keeps glibc's own pages). That first
// call then took 40-52 ms at 10 M, and 37 ms in the growth curve's restart
// at 1 M (docs/decisions.md). Where the C library is not glibc, nothing is
// set.

/*
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static const char tifeeds_huge_pages[] = "glibc.malloc.hugetlb=1";

// tifeeds_restart_with_huge_pages executes the program again with
// glibc.malloc.hugetlb=1 added to GLIBC_TUNABLES, unless that names the
// tunable. It returns only if it could not: the program goes on with
// glibc's own pages.
static void tifeeds_restart_with_huge_pages(char **argv) {
	const char *tunables = getenv("GLIBC_TUNABLES");
	if (argv == NULL || argv[0] == NULL || (tunables != NULL && strstr(tunables, "glibc.malloc.hugetlb=") != NULL)) {
		return;
	}
	size_t size = (tunables != NULL ? strlen(tunables) + 1 : 0) + sizeof tifeeds_huge_pages;
	char *value = malloc(size);
	if (value == NULL) {
		return;
	}
	value[0] = '\0';
	if (tunables != NULL && tunables[0] != '\0') {
		strcat(strcat(value, tunables), ":");
	}
	strcat(value, tifeeds_huge_pages);
	if (setenv("GLIBC_TUNABLES", value, 1) == 0) {
		execv("/proc/self/exe", argv);
		// Not executed: the environment says what this process runs with.
		if (tunables != NULL) {
			setenv("GLIBC_TUNABLES", tunables, 1);
		} else {
			unsetenv("GLIBC_TUNABLES");
		}
	}
	free(value);
}

// glibc calls its constructors with the program's arguments.
__attribute__((constructor)) static void tifeeds_keep_freed_memory(int argc, char **argv, char **envp) {
	tifeeds_restart_with_huge_pages(argv);
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
}
#endif
*/
import "C"
