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
// slow. When handOff (unless nil) says so as they start, the first way
// stops then, for when they are known to cost little: two ways at once
// take two cores, and on two beside an ingest each took twice as long
// (raceRange).
//
// On PostgreSQL a way not done first stops after the step it is taking:
// cancelled mid-statement, pgx closes the connection, and the next request
// on it would dial and prepare anew. Steps are detached from ctx, then,
// except that ctx ending before a way is done stops every way. SQLite
// interrupts a statement where it stands and keeps its connection: there
// the other ways stop at once, their cores freed.
func (s *Store) race(ctx context.Context, alone time.Duration, handOff func() bool, ways ...wayStep) (int, error) {
	steps, stop := context.WithCancel(context.WithoutCancel(ctx))
	// The first way's steps, which a hand-off ends: on SQLite where its
	// statement stands, on PostgreSQL after its step (as a way not done
	// first ends).
	firstSteps, stopFirst := context.WithCancel(steps)
	var handedOff atomic.Bool
	unwatch := context.AfterFunc(ctx, stop)
	var found atomic.Bool
	type outcome struct {
		way int
		err error
	}
	outcomes := make(chan outcome, len(ways))
	start := make(chan struct{})
	var begin sync.Once
	startOthers := func() {
		begin.Do(func() {
			if handOff != nil && len(ways) > 1 && !found.Load() && handOff() {
				handedOff.Store(true)
				if s.Dialect == SQLite {
					stopFirst()
				}
			}
			close(start)
		})
	}
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
			own := steps
			if i == 0 {
				own = firstSteps
			}
			for first := true; !found.Load(); first = false {
				if i == 0 && handedOff.Load() {
					return
				}
				done, err := step(own)
				if i == 0 && handedOff.Load() && (!done || err != nil) {
					// Handed off mid-step (stopped there on SQLite): the
					// others give the page.
					return
				}
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
		stopFirst()
		stop()
	}()
	return first.way, first.err
}
