// Package background runs work that no one waits for at a lower CPU
// priority than the requests someone does wait for: a feed's run, its
// batches, the key indexer, the sweeper.
package background

import "runtime"

// Nice is how much lower than its process's the priority of background
// work is (the nice value added). At nice 10 the kernel gives a thread
// about a tenth of the weight of one at 0, so a request takes a core the
// moment it needs one, and the work loses nothing while no request runs.
// On two cores at 10,000,000 IoCs on SQLite, pages called back to back
// beside an ingest of 500,000 had 26 calls over 50 ms in 15,012 without
// it (p99 24.6-30.4 ms) and 11 in 20,296 with it (p99 18.3-20.8), and
// the ingest beside them took about a tenth longer (docs/benchmarks.md).
const Nice = 10

// lower lowers the calling thread's priority (lowerPriority; a variable
// for tests).
var lower = lowerPriority

// Run runs fn on a thread of its own at Nice and waits for it
// (OnOwnThread). Goroutines fn starts run at the usual priority: a thread
// inherits its creator's priority, but the runtime has a thread of its own
// create the threads it needs while on a locked one (runtime.newm), for
// this very reason. A thread costs some tens of microseconds to start,
// against the milliseconds of any work it carries.
func Run(fn func()) {
	OnOwnThread(func() {
		lower(Nice)
		fn()
	})
}

// OnOwnThread runs fn on a thread of its own and waits for it; a panic in
// fn goes on in the caller. fn may change what the kernel keeps of its
// thread (its CPU priority, its I/O class): the thread ends with fn (its
// goroutine stays locked to it), since a thread cannot take its priority
// back without privilege, and must not run anything else at the lower one.
// (When fn's goroutine happens to run on the process's main thread, the
// runtime parks that thread for good rather than end it: it runs nothing
// else either.)
func OnOwnThread(fn func()) {
	done := make(chan any, 1)
	go func() {
		runtime.LockOSThread()
		defer func() { done <- recover() }()
		fn()
	}()
	if p := <-done; p != nil {
		panic(p)
	}
}

// Record records, until restore, the thread id and the nice value after
// of each thread Run lowers the priority of, on Linux (for tests of the
// callers).
func Record() (threads func() []Thread, restore func()) {
	saved := lower
	var seen recorded
	lower = func(by int) bool {
		ok := saved(by)
		seen.add(currentThread())
		return ok
	}
	return seen.all, func() { lower = saved }
}
