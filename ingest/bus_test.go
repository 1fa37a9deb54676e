package ingest

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

	b.publishFeed(&store.Feed{ID: 1, StatusMessage: "Success"})
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
	b.publishFeed(&store.Feed{ID: 1})
	if ev := <-all; ev.FeedID != 1 {
		t.Errorf("after cancel, all got %+v", ev)
	}
}
