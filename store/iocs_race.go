package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// wayStep takes one step of a way to a page, on ctx; done says the way
// has its answer.
type wayStep func(ctx context.Context) (done bool, err error)

// race takes ways to one page at once, each a series of steps on a reader
// connection of its own, and returns the index of the first way done (or
// failed). The first way starts alone; the others start when its first
// step is over, or when it has run alone for alone (unless 0): most pages
// are found by the first way's first step, which the others would only
// slow.
//
// On PostgreSQL a way not done first stops after the step it is taking:
// cancelled mid-statement, pgx closes the connection, and the next request
// on it would dial and prepare anew. Steps are detached from ctx, then,
// except that ctx ending before a way is done stops every way. SQLite
// interrupts a statement where it stands and keeps its connection: there
// the other ways stop at once, their cores freed.
func (s *Store) race(ctx context.Context, alone time.Duration, ways ...wayStep) (int, error) {
	steps, stop := context.WithCancel(context.WithoutCancel(ctx))
	unwatch := context.AfterFunc(ctx, stop)
	var found atomic.Bool
	type outcome struct {
		way int
		err error
	}
	outcomes := make(chan outcome, len(ways))
	start := make(chan struct{})
	var begin sync.Once
	startOthers := func() { begin.Do(func() { close(start) }) }
	if alone > 0 {
		defer time.AfterFunc(alone, startOthers).Stop()
	}
	var running sync.WaitGroup
	running.Add(len(ways))
	for i, step := range ways {
		go func() {
			defer running.Done()
			if i > 0 {
				select {
				case <-start:
				case <-steps.Done():
					outcomes <- outcome{i, steps.Err()}
					return
				}
			}
			for first := true; !found.Load(); first = false {
				done, err := step(steps)
				if done || err != nil {
					// The others, waiting to start, see it done and end.
					found.Store(true)
					startOthers()
					outcomes <- outcome{i, err}
					return
				}
				if i == 0 && first {
					startOthers()
				}
			}
		}()
	}
	first := <-outcomes
	found.Store(true)
	unwatch()
	if s.Dialect == SQLite {
		stop()
	}
	go func() {
		running.Wait()
		stop()
	}()
	return first.way, first.err
}
