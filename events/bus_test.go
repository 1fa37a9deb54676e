package events

import (
	"testing"

	"github.com/tifeeds/tifeeds/store"
)

func TestBus(t *testing.T) {
	b := NewBus()
	all, cancelAll := b.Subscribe(0)
	one, cancelOne := b.Subscribe(1)
	slow, _ := b.Subscribe(2)
	defer cancelAll()

	b.PublishFeed(&store.Feed{ID: 1, StatusMessage: "Success"})
	b.Publish(Event{FeedID: 2, Progress: &Progress{FeedID: 2, Stored: 5}})
	if ev := <-all; ev.FeedID != 1 || ev.Feed.StatusMessage != "Success" {
		t.Errorf("all got %+v", ev)
	}
	if ev := <-all; ev.FeedID != 2 || ev.Progress.Stored != 5 {
		t.Errorf("all got %+v", ev)
	}
	if ev := <-one; ev.FeedID != 1 {
		t.Errorf("feed 1 subscriber got %+v", ev)
	}
	if len(one) != 0 {
		t.Error("feed 1 subscriber got feed 2's event")
	}

	// A subscriber that does not read is dropped; publishing goes on.
	for i := range subscriberBuffer + 10 {
		b.Publish(Event{FeedID: 2, Progress: &Progress{Stored: int64(i)}})
		<-all
	}
	n := 0
	for range slow {
		n++
	}
	if n != subscriberBuffer {
		t.Errorf("slow subscriber got %d events before being dropped, want %d", n, subscriberBuffer)
	}

	cancelOne()
	if _, ok := <-one; ok {
		t.Error("channel open after cancel")
	}
	cancelOne() // twice is harmless
	b.PublishFeed(&store.Feed{ID: 1})
	if ev := <-all; ev.FeedID != 1 {
		t.Errorf("after cancel, all got %+v", ev)
	}
}

// TestBusRevocations: a revocation reaches the revocation handlers, not the
// feed subscribers, and a cancelled handler no longer.
func TestBusRevocations(t *testing.T) {
	b := NewBus()
	feeds, stop := b.Subscribe(0)
	defer stop()
	var got []Revocation
	cancel := b.OnRevocation(func(r Revocation) { got = append(got, r) })
	b.PublishRevocation(Revocation{UserID: 7})
	cancel()
	b.PublishRevocation(Revocation{TenantID: "t"})
	if len(got) != 1 || got[0].UserID != 7 {
		t.Errorf("handler got %+v, want the one revocation published before cancel", got)
	}
	select {
	case ev := <-feeds:
		t.Errorf("feed subscriber got %+v", ev)
	default:
	}
	var nilBus *Bus
	nilBus.PublishRevocation(Revocation{UserID: 1}) // must not panic
}
