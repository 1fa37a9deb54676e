package store

// SQLite's memory comes from glibc's allocator, which tifeeds sets up as
// soon as its process is loaded, before the Go runtime starts a thread
// (a constructor: set later, the limit on heaps came after the runtime's
// first threads had each taken a heap of their own).
//
// It keeps the memory SQLite frees for its next use rather than hand it
// back to the system, in one heap a core. A reader's page cache is
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
// defaults (docs/benchmarks.md).
//
// The trim threshold keeps 64 MB free at the top of a heap, and the mmap
// threshold (32 MB, glibc's most) leaves a statement's sorter to a heap
// rather than a mapping of its own. Where the C library is not glibc,
// nothing is set.

/*
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>

__attribute__((constructor)) static void tifeeds_keep_freed_memory(void) {
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	mallopt(M_ARENA_MAX, cores > 2 ? (int)cores : 2);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
}
#endif
*/
import "C"
