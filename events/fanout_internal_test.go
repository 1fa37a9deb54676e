package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

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

func progress(feedID, run int64) Event {
	return Event{FeedID: feedID, Progress: &Progress{FeedID: feedID, RunID: run, Fetched: 10 * run, Stored: 9 * run, Rejected: run}}
}

func describe(ev Event) string {
	b, _ := json.Marshal(ev)
	return string(b)
}
