package ingest

import (
	"sync"

	"github.com/tifeeds/tifeeds/store"
)

// Event is one change the bus carries: a feed whose status, message,
// enabled flag or last ingestion changed, or the progress of a run.
type Event struct {
	FeedID int64
	// Feed is the feed as it is after the change; nil on progress events.
	Feed *store.Feed
	// Progress is set on run progress events.
	Progress *Progress
}

// Progress is the state of a run: sent while it goes on and once when it
// ends (Done).
type Progress struct {
	FeedID    int64
	RunID     int64
	Fetched   int64
	Stored    int64
	Rejected  int64
	Done      bool
	ErrorKind string
}

// subscriberBuffer is how many events a subscriber may lag behind before it
// is dropped.
const subscriberBuffer = 256

// Bus fans feed events out to subscribers in this process. Publishing never
// blocks: a subscriber whose buffer is full is dropped (its channel closed),
// so a slow reader cannot hold up ingestion.
type Bus struct {
	mu   sync.Mutex
	next int
	subs map[int]*subscriber
	// relay, when set, also sends each published event to the other
	// instances sharing the database (see Fanout); it must not block.
	relay func(Event)
}

type subscriber struct {
	feedID int64 // 0: every feed
	ch     chan Event
}

// NewBus returns an empty bus.
func NewBus() *Bus {
	return &Bus{subs: map[int]*subscriber{}}
}

// Subscribe returns a channel of the events of feedID (every feed when it
// is 0) and a cancel function that ends the subscription. The channel is
// closed on cancel, or when the subscriber fell too far behind.
func (b *Bus) Subscribe(feedID int64) (<-chan Event, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	s := &subscriber{feedID: feedID, ch: make(chan Event, subscriberBuffer)}
	b.subs[id] = s
	return s.ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[id]; ok {
			delete(b.subs, id)
			close(s.ch)
		}
	}
}

// Publish sends ev to every subscriber of its feed and of all feeds, and
// to the other instances when a Fanout relays this bus.
func (b *Bus) Publish(ev Event) {
	if b == nil {
		return
	}
	if relay := b.deliver(ev); relay != nil {
		relay(ev)
	}
}

// deliver sends ev to the subscribers in this process only, and returns
// the relay to call outside the lock.
func (b *Bus) deliver(ev Event) (relay func(Event)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, s := range b.subs {
		if s.feedID != 0 && s.feedID != ev.FeedID {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			delete(b.subs, id)
			close(s.ch)
		}
	}
	return b.relay
}

// publishFeed announces a feed's new state.
func (b *Bus) publishFeed(f *store.Feed) {
	if f == nil {
		return
	}
	cp := *f
	b.Publish(Event{FeedID: f.ID, Feed: &cp})
}
