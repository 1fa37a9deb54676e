package background_test

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tifeeds/tifeeds/internal/background"
)

func nice(t *testing.T, tid int) int {
	t.Helper()
	n, err := background.ThreadNice(tid)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRunLowersTheWorksThreadAlone: the work runs on another thread, at
// the lower priority, the caller's is unchanged, the thread ends with the
// work (so that no other goroutine runs at its priority), a panic reaches
// the caller, and Record sees the thread.
func TestRunLowersTheWorksThreadAlone(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	caller := unix.Gettid()
	callerNice := nice(t, caller)
	threads, restore := background.Record()
	defer restore()
	var tid, workNice int
	background.Run(func() {
		tid = unix.Gettid()
		workNice = nice(t, tid)
	})
	if tid == caller {
		t.Fatal("the work ran on the caller's thread")
	}
	if want := min(callerNice+background.Nice, 19); workNice != want {
		t.Errorf("the work ran at nice %d, want %d", workNice, want)
	}
	if got := nice(t, caller); got != callerNice {
		t.Errorf("the caller's nice moved from %d to %d", callerNice, got)
	}
	if got := threads(); len(got) != 1 || got[0] != (background.Thread{ID: tid, Nice: workNice}) {
		t.Errorf("Record saw %v, want the work's thread %d at %d", got, tid, workNice)
	}
	// The process's main thread is the one a goroutine that exits locked
	// does not end: the runtime parks it for good instead (runtime.mexit),
	// so it runs nothing else either. The work lands there now and then.
	task := "/proc/self/task/" + strconv.Itoa(tid)
	for deadline := time.Now().Add(10 * time.Second); tid != os.Getpid(); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the work's thread %d is still there after the work", tid)
		}
	}
	// Threads the runtime starts while the work runs do not inherit its
	// priority: goroutines the work starts, each holding a thread of its
	// own until all have one, run at the caller's.
	const held = 8
	var ready sync.WaitGroup
	ready.Add(held)
	nices := make(chan int, held)
	background.Run(func() {
		for range held {
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				n, _ := background.ThreadNice(0)
				nices <- n
				ready.Done()
				ready.Wait()
			}()
		}
		ready.Wait()
	})
	for range held {
		if n := <-nices; n != callerNice {
			t.Errorf("a goroutine the work started ran at nice %d, want the caller's %d", n, callerNice)
		}
	}
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the work's panic", p)
			}
		}()
		background.Run(func() { panic("boom") })
	}()
}
