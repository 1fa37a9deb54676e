// Package eventstest runs several tifeeds instances, as far as events go,
// over one PostgreSQL database, for the tests of the packages whose events
// cross instances.
package eventstest

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/store"
)

// DeliveryWait bounds how long a test waits for an event to cross the
// database; events normally arrive in milliseconds.
const DeliveryWait = 10 * time.Second

// Instance is one tifeeds process as far as events go: its own store
// (connection pool), bus and fanout, and a subscription to every feed.
type Instance struct {
	Store  *store.Store
	Bus    *events.Bus
	Fanout *events.Fanout
	Events <-chan events.Event
}

// NewInstance opens a store on dsn and relays a new bus over it; it returns
// once the listener is up.
func NewInstance(t *testing.T, dsn string) *Instance {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	bus := events.NewBus()
	evs, cancel := bus.Subscribe(0)
	t.Cleanup(cancel)
	f, err := events.NewFanout(events.FanoutOptions{Store: st, Bus: bus, Log: slog.New(slog.DiscardHandler),
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	t.Cleanup(f.Stop) // before st.Close: cleanups run last-in first-out
	in := &Instance{Store: st, Bus: bus, Fanout: f, Events: evs}
	in.WaitListening(t, 0)
	return in
}

// WaitListening waits until the instance's listener backend, other than
// the one with pid notPID, has run LISTEN, and returns its pid.
func (in *Instance) WaitListening(t *testing.T, notPID int) int {
	t.Helper()
	deadline := time.Now().Add(DeliveryWait)
	for {
		var pids []int
		err := in.Store.DB.NewRaw(`SELECT pid FROM pg_stat_activity
			WHERE application_name = ? AND state = 'idle' AND query = ? AND pid <> ?`,
			in.Fanout.ApplicationName(), "LISTEN "+events.EventChannel, notPID).Scan(context.Background(), &pids)
		if err != nil {
			t.Fatalf("pg_stat_activity: %v", err)
		}
		if len(pids) == 1 {
			return pids[0]
		}
		if len(pids) > 1 {
			t.Fatalf("%d listener backends for one instance: %v", len(pids), pids)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener of %s did not LISTEN within %s", in.Fanout.Instance(), DeliveryWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Next returns the instance's next event, failing after a bounded wait.
func (in *Instance) Next(t *testing.T, what string) events.Event {
	t.Helper()
	select {
	case ev, ok := <-in.Events:
		if !ok {
			t.Fatalf("%s: the subscription was dropped", what)
		}
		return ev
	case <-time.After(DeliveryWait):
		t.Fatalf("%s: no event within %s", what, DeliveryWait)
		return events.Event{}
	}
}

// ExpectProgress takes the next event and checks it is the progress of run.
func (in *Instance) ExpectProgress(t *testing.T, what string, feedID, run int64) events.Event {
	t.Helper()
	ev := in.Next(t, what)
	if ev.Progress == nil || ev.FeedID != feedID || ev.Progress.RunID != run {
		t.Fatalf("%s: got %s, want progress of run %d of feed %d", what, Describe(ev), run, feedID)
	}
	return ev
}

// Describe shows an event in a failure message.
func Describe(ev events.Event) string {
	b, _ := json.Marshal(ev)
	return string(b)
}

// Progress is a progress event of run whose counters tell runs apart.
func Progress(feedID, run int64) events.Event {
	return events.Event{FeedID: feedID, Progress: &events.Progress{FeedID: feedID, RunID: run, Fetched: 10 * run, Stored: 9 * run, Rejected: run}}
}
