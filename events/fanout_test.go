package events_test

import (
	"context"
	"testing"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/events/eventstest"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

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
	a, b := eventstest.NewInstance(t, dsn), eventstest.NewInstance(t, dsn)
	if a.Fanout.Instance() == b.Fanout.Instance() {
		t.Fatal("two fanouts share an instance id")
	}
	ctx := context.Background()
	feed := createTestFeed(t, a.Store, "fanout")

	a.Bus.Publish(eventstest.Progress(feed.ID, 1))
	a.ExpectProgress(t, "A, its own event", feed.ID, 1)
	got := b.ExpectProgress(t, "B, A's event", feed.ID, 1)
	if want := eventstest.Progress(feed.ID, 1).Progress; *got.Progress != *want {
		t.Fatalf("B got progress %+v, want %+v", got.Progress, want)
	}

	// B changes the feed and publishes a copy that is already stale: A must
	// show the row as the store has it.
	stale := *feed
	if err := b.Store.SetFeedMessage(ctx, feed.ID, store.MessageSuccess); err != nil {
		t.Fatal(err)
	}
	b.Bus.Publish(events.Event{FeedID: feed.ID, Feed: &stale})
	if ev := b.Next(t, "B, its own feed event"); ev.Feed == nil || ev.Feed.StatusMessage != feed.StatusMessage {
		t.Fatalf("B got %s, want its own event as published", eventstest.Describe(ev))
	}
	ev := a.Next(t, "A, B's feed event (and no echo of A's progress before it)")
	if ev.Feed == nil || ev.Progress != nil || ev.FeedID != feed.ID {
		t.Fatalf("A got %s, want B's feed event", eventstest.Describe(ev))
	}
	if ev.Feed.StatusMessage != store.MessageSuccess || ev.Feed.Name != feed.Name {
		t.Errorf("A got feed %+v, want the fresh row with message %q", ev.Feed, store.MessageSuccess)
	}

	a.Bus.Publish(eventstest.Progress(feed.ID, 2))
	a.ExpectProgress(t, "A, its own second event", feed.ID, 2)
	b.ExpectProgress(t, "B, A's second event (and no echo of its feed event before it)", feed.ID, 2)

	b.Bus.Publish(eventstest.Progress(feed.ID, 3))
	b.ExpectProgress(t, "B, its own third event", feed.ID, 3)
	a.ExpectProgress(t, "A, B's third event (and no echo of A's second before it)", feed.ID, 3)

	// A feed deleted before the notice arrives is announced as deleted,
	// not with a missing row (so that a run of it there stops); the next
	// event still comes through.
	gone := createTestFeed(t, b.Store, "gone")
	if err := b.Store.DeleteFeed(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	b.Bus.Publish(events.Event{FeedID: gone.ID, Feed: gone})
	b.Bus.Publish(eventstest.Progress(feed.ID, 4))
	if ev := b.Next(t, "B, the deleted feed"); ev.FeedID != gone.ID {
		t.Fatalf("B got %s", eventstest.Describe(ev))
	}
	b.ExpectProgress(t, "B, its own fourth event", feed.ID, 4)
	if ev := a.Next(t, "A, the deleted feed"); ev.FeedID != gone.ID || !ev.Deleted || ev.Feed != nil {
		t.Fatalf("A got %s, want the deletion of feed %d", eventstest.Describe(ev), gone.ID)
	}
	a.ExpectProgress(t, "A, B's fourth event", feed.ID, 4)
}

// TestFanoutListenerReconnects kills the listener's backend and checks that
// a new connection listens and delivers the events sent after.
func TestFanoutListenerReconnects(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	a, b := eventstest.NewInstance(t, dsn), eventstest.NewInstance(t, dsn)
	feed := createTestFeed(t, a.Store, "fanout")

	old := a.WaitListening(t, 0)
	var killed bool
	if err := b.Store.DB.NewRaw("SELECT pg_terminate_backend(?)", old).Scan(context.Background(), &killed); err != nil || !killed {
		t.Fatalf("terminate the listener backend %d: %v (terminated: %v)", old, err, killed)
	}
	if pid := a.WaitListening(t, old); pid == old {
		t.Fatalf("the listener kept backend %d", pid)
	}

	b.Bus.Publish(eventstest.Progress(feed.ID, 7))
	b.ExpectProgress(t, "B, its own event", feed.ID, 7)
	a.ExpectProgress(t, "A after reconnecting, B's event", feed.ID, 7)

	// A still sends too: its notices go through the pool, not the listener.
	a.Bus.Publish(eventstest.Progress(feed.ID, 8))
	a.ExpectProgress(t, "A, its own event", feed.ID, 8)
	b.ExpectProgress(t, "B, A's event after A reconnected", feed.ID, 8)
}
