package ingest

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// deliveryWait bounds how long a test waits for an event to cross the
// database; events normally arrive in milliseconds.
const deliveryWait = 10 * time.Second

// instance is one tifeeds process as far as events go: its own store
// (connection pool), bus and fanout.
type instance struct {
	st     *store.Store
	bus    *Bus
	fanout *Fanout
	events <-chan Event
}

func newInstance(t *testing.T, dsn string) *instance {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	bus := NewBus()
	events, cancel := bus.Subscribe(0)
	t.Cleanup(cancel)
	f, err := NewFanout(FanoutOptions{Store: st, Bus: bus, Log: slog.New(slog.DiscardHandler),
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	t.Cleanup(f.Stop) // before st.Close: cleanups run last-in first-out
	in := &instance{st: st, bus: bus, fanout: f, events: events}
	in.waitListening(t, 0)
	return in
}

// waitListening waits until the instance's listener backend, other than
// the one with pid notPID, has run LISTEN, and returns its pid.
func (in *instance) waitListening(t *testing.T, notPID int) int {
	t.Helper()
	deadline := time.Now().Add(deliveryWait)
	for {
		var pids []int
		err := in.st.DB.NewRaw(`SELECT pid FROM pg_stat_activity
			WHERE application_name = ? AND state = 'idle' AND query = ? AND pid <> ?`,
			in.fanout.ApplicationName(), "LISTEN "+EventChannel, notPID).Scan(context.Background(), &pids)
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
			t.Fatalf("the listener of %s did not LISTEN within %s", in.fanout.Instance(), deliveryWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// next returns the instance's next event, failing after a bounded wait.
func (in *instance) next(t *testing.T, what string) Event {
	t.Helper()
	select {
	case ev, ok := <-in.events:
		if !ok {
			t.Fatalf("%s: the subscription was dropped", what)
		}
		return ev
	case <-time.After(deliveryWait):
		t.Fatalf("%s: no event within %s", what, deliveryWait)
		return Event{}
	}
}

// expectProgress takes the next event and checks it is the progress of run.
func (in *instance) expectProgress(t *testing.T, what string, feedID, run int64) Event {
	t.Helper()
	ev := in.next(t, what)
	if ev.Progress == nil || ev.FeedID != feedID || ev.Progress.RunID != run {
		t.Fatalf("%s: got %s, want progress of run %d of feed %d", what, describe(ev), run, feedID)
	}
	return ev
}

func describe(ev Event) string {
	b, _ := json.Marshal(ev)
	return string(b)
}

func progress(feedID, run int64) Event {
	return Event{FeedID: feedID, Progress: &Progress{FeedID: feedID, RunID: run, Fetched: 10 * run, Stored: 9 * run, Rejected: run}}
}

func createTestFeed(t *testing.T, st *store.Store, name string) *store.Feed {
	t.Helper()
	f, err := st.CreateCustomFeed(context.Background(), store.NewCustomFeed{
		Category: store.CategoryTSV, Name: name, CollectionURL: "http://127.0.0.1:1/f.tsv",
		PollingFrequency: 4, RetentionPeriod: 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFanoutAcrossInstances checks that each event reaches the other
// instance once and is not echoed back. No echo is proved by order: NOTIFY
// delivers in commit order, so an echo of an event would arrive before the
// reply the other instance sends once it has seen that event.
func TestFanoutAcrossInstances(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	a, b := newInstance(t, dsn), newInstance(t, dsn)
	if a.fanout.Instance() == b.fanout.Instance() {
		t.Fatal("two fanouts share an instance id")
	}
	ctx := context.Background()
	feed := createTestFeed(t, a.st, "fanout")

	a.bus.Publish(progress(feed.ID, 1))
	a.expectProgress(t, "A, its own event", feed.ID, 1)
	got := b.expectProgress(t, "B, A's event", feed.ID, 1)
	if want := progress(feed.ID, 1).Progress; *got.Progress != *want {
		t.Fatalf("B got progress %+v, want %+v", got.Progress, want)
	}

	// B changes the feed and publishes a copy that is already stale: A must
	// show the row as the store has it.
	stale := *feed
	if err := b.st.SetFeedMessage(ctx, feed.ID, store.MessageSuccess); err != nil {
		t.Fatal(err)
	}
	b.bus.Publish(Event{FeedID: feed.ID, Feed: &stale})
	if ev := b.next(t, "B, its own feed event"); ev.Feed == nil || ev.Feed.StatusMessage != feed.StatusMessage {
		t.Fatalf("B got %s, want its own event as published", describe(ev))
	}
	ev := a.next(t, "A, B's feed event (and no echo of A's progress before it)")
	if ev.Feed == nil || ev.Progress != nil || ev.FeedID != feed.ID {
		t.Fatalf("A got %s, want B's feed event", describe(ev))
	}
	if ev.Feed.StatusMessage != store.MessageSuccess || ev.Feed.Name != feed.Name {
		t.Errorf("A got feed %+v, want the fresh row with message %q", ev.Feed, store.MessageSuccess)
	}

	a.bus.Publish(progress(feed.ID, 2))
	a.expectProgress(t, "A, its own second event", feed.ID, 2)
	b.expectProgress(t, "B, A's second event (and no echo of its feed event before it)", feed.ID, 2)

	b.bus.Publish(progress(feed.ID, 3))
	b.expectProgress(t, "B, its own third event", feed.ID, 3)
	a.expectProgress(t, "A, B's third event (and no echo of A's second before it)", feed.ID, 3)

	// A feed deleted before the notice arrives is announced as deleted,
	// not with a missing row (so that a run of it there stops); the next
	// event still comes through.
	gone := createTestFeed(t, b.st, "gone")
	if err := b.st.DeleteFeed(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	b.bus.Publish(Event{FeedID: gone.ID, Feed: gone})
	b.bus.Publish(progress(feed.ID, 4))
	if ev := b.next(t, "B, the deleted feed"); ev.FeedID != gone.ID {
		t.Fatalf("B got %s", describe(ev))
	}
	b.expectProgress(t, "B, its own fourth event", feed.ID, 4)
	if ev := a.next(t, "A, the deleted feed"); ev.FeedID != gone.ID || !ev.Deleted || ev.Feed != nil {
		t.Fatalf("A got %s, want the deletion of feed %d", describe(ev), gone.ID)
	}
	a.expectProgress(t, "A, B's fourth event", feed.ID, 4)
}

// TestFanoutListenerReconnects kills the listener's backend and checks that
// a new connection listens and delivers the events sent after.
func TestFanoutListenerReconnects(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	a, b := newInstance(t, dsn), newInstance(t, dsn)
	feed := createTestFeed(t, a.st, "fanout")

	old := a.waitListening(t, 0)
	var killed bool
	if err := b.st.DB.NewRaw("SELECT pg_terminate_backend(?)", old).Scan(context.Background(), &killed); err != nil || !killed {
		t.Fatalf("terminate the listener backend %d: %v (terminated: %v)", old, err, killed)
	}
	if pid := a.waitListening(t, old); pid == old {
		t.Fatalf("the listener kept backend %d", pid)
	}

	b.bus.Publish(progress(feed.ID, 7))
	b.expectProgress(t, "B, its own event", feed.ID, 7)
	a.expectProgress(t, "A after reconnecting, B's event", feed.ID, 7)

	// A still sends too: its notices go through the pool, not the listener.
	a.bus.Publish(progress(feed.ID, 8))
	a.expectProgress(t, "A, its own event", feed.ID, 8)
	b.expectProgress(t, "B, A's event after A reconnected", feed.ID, 8)
}

// TestFanoutNoticeFitsNotify checks that a notice carries ids and counters,
// not the feed row, so a long description cannot pass NOTIFY's 8000 bytes.
func TestFanoutNoticeFitsNotify(t *testing.T) {
	big := &store.Feed{ID: 42, Name: "TSV_big", Description: strings.Repeat("x", 20000),
		CollectionURL: "https://example.com/" + strings.Repeat("p", 4000)}
	cases := map[string]struct {
		ev   Event
		kind string
	}{
		"feed":     {Event{FeedID: 42, Feed: big}, noticeFeed},
		"progress": {progress(42, 5), noticeProgress},
		"failed run": {Event{FeedID: 42, Progress: &Progress{FeedID: 42, RunID: 6, Done: true,
			ErrorKind: "connection"}}, noticeProgress},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			payload, err := encodeNotice("instance-1", tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			if len(payload) > 200 {
				t.Errorf("payload is %d bytes: %s", len(payload), payload)
			}
			var n notice
			if err := json.Unmarshal(payload, &n); err != nil {
				t.Fatal(err)
			}
			if n.Instance != "instance-1" || n.Kind != tc.kind || n.FeedID != 42 {
				t.Errorf("notice = %+v", n)
			}
			if tc.ev.Progress != nil && (n.Progress == nil || *n.Progress != *tc.ev.Progress) {
				t.Errorf("progress = %+v, want %+v", n.Progress, tc.ev.Progress)
			}
		})
	}
}

// TestFanoutQueueFullDrops checks that Publish does not wait when the
// notify queue is full: the event still reaches local subscribers and the
// surplus is dropped and counted.
func TestFanoutQueueFullDrops(t *testing.T) {
	st := storetest.NewPostgres(t)
	bus := NewBus()
	events, cancel := bus.Subscribe(0)
	defer cancel()
	f, err := NewFanout(FanoutOptions{Store: st, Bus: bus, Log: slog.New(slog.DiscardHandler), Queue: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Relay without the sender running, as when the database hangs.
	bus.relay = f.enqueue
	for run := int64(1); run <= 5; run++ {
		bus.Publish(progress(1, run))
	}
	if len(events) != 5 {
		t.Errorf("local subscriber got %d events, want 5", len(events))
	}
	if len(f.queue) != 2 || f.dropped.Load() != 3 {
		t.Errorf("queued %d, dropped %d; want 2 and 3", len(f.queue), f.dropped.Load())
	}
}

// TestFanoutSQLiteIsLocal checks that on SQLite the bus stays in-process.
func TestFanoutSQLiteIsLocal(t *testing.T) {
	bus := NewBus()
	f, err := NewFanout(FanoutOptions{Store: storetest.NewSQLite(t), Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(context.Background())
	defer f.Stop()
	if bus.relay != nil {
		t.Error("a fanout on SQLite relays events")
	}
	events, cancel := bus.Subscribe(0)
	defer cancel()
	bus.Publish(progress(1, 1))
	if ev := <-events; ev.Progress == nil || ev.Progress.RunID != 1 {
		t.Errorf("got %s", describe(ev))
	}
}
