package events

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
	// Revocation is set on revocation events, which go to OnRevocation
	// handlers, never to feed subscribers.
	Revocation *Revocation
	// Signal is set on events that say something other than a feed changed;
	// they go to that signal's OnSignal handlers only.
	Signal Signal `json:",omitempty"`
	// Deleted is set on the event that says the feed was deleted.
	Deleted bool
}

// Revocation says that a credential of a user, or of any user of a tenant,
// may have stopped holding (a key revoked, a session ended, a tenant
// deleted). It names no credential: those holding one of the user's re-check
// it against the store.
type Revocation struct {
	UserID   int64  `json:"u,omitempty"`
	TenantID string `json:"t,omitempty"`
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
	// Downloaded is how many bytes the run's download read so far, and
	// DownloadTotal of how many (-1 when the server did not say; 0 before
	// a download).
	Downloaded    int64 `json:",omitempty"`
	DownloadTotal int64 `json:",omitempty"`
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
	// revoked are the OnRevocation handlers.
	revoked map[int]func(Revocation)
	// signalled are the OnSignal handlers of each signal.
	signalled map[Signal]map[int]func()
}

// Signal names a change that is not a feed's, which every instance acts on
// by re-reading the store.
type Signal string

const (
	// SignalTenants: a tenant, tenant group or tenant's user changed, so
	// cached tenant answers are dropped.
	SignalTenants Signal = "tenants"
	// SignalAllowlist: allowlist entries were added or deleted, so they
	// are read again.
	SignalAllowlist Signal = "allowlist"
	// SignalAssets: tenant assets were added or deleted, so the asset
	// watch's index is built again (package notify).
	SignalAssets Signal = "assets"
)

type subscriber struct {
	feedID int64 // 0: every feed
	ch     chan Event
}

// NewBus returns an empty bus.
func NewBus() *Bus {
	return &Bus{subs: map[int]*subscriber{}, revoked: map[int]func(Revocation){}, signalled: map[Signal]map[int]func(){}}
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

// OnRevocation calls fn with each revocation published here or, through a
// Fanout, on another instance, until the returned function is called. fn
// runs inside Publish: it must not block.
func (b *Bus) OnRevocation(fn func(Revocation)) (cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	b.revoked[id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.revoked, id)
	}
}

// PublishRevocation announces a revocation to this process's handlers and
// to the other instances. A nil bus does nothing.
func (b *Bus) PublishRevocation(r Revocation) {
	if b == nil {
		return
	}
	if relay := b.deliverRevocation(r); relay != nil {
		relay(Event{Revocation: &r})
	}
}

// deliverRevocation calls this process's handlers only, and returns the
// relay to call.
func (b *Bus) deliverRevocation(r Revocation) (relay func(Event)) {
	b.mu.Lock()
	handlers := make([]func(Revocation), 0, len(b.revoked))
	for _, fn := range b.revoked {
		handlers = append(handlers, fn)
	}
	relay = b.relay
	b.mu.Unlock()
	for _, fn := range handlers {
		fn(r)
	}
	return relay
}

// OnSignal calls fn on each sig published here or, through a Fanout, on
// another instance (and when the Fanout may have missed some), until the
// returned function is called. fn runs inside Publish: it must not block.
func (b *Bus) OnSignal(sig Signal, fn func()) (cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	if b.signalled[sig] == nil {
		b.signalled[sig] = map[int]func(){}
	}
	b.signalled[sig][id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.signalled[sig], id)
	}
}

// PublishSignal announces sig to this process's handlers and to the other
// instances. A nil bus does nothing.
func (b *Bus) PublishSignal(sig Signal) {
	if b == nil {
		return
	}
	if relay := b.deliverSignal(sig); relay != nil {
		relay(Event{Signal: sig})
	}
}

// deliverSignal calls this process's handlers of sig only, and returns the
// relay to call.
func (b *Bus) deliverSignal(sig Signal) (relay func(Event)) {
	b.mu.Lock()
	handlers := make([]func(), 0, len(b.signalled[sig]))
	for _, fn := range b.signalled[sig] {
		handlers = append(handlers, fn)
	}
	relay = b.relay
	b.mu.Unlock()
	for _, fn := range handlers {
		fn()
	}
	return relay
}

// deliverAllSignals calls every signal's handlers in this process, for
// when signals from other instances may have been missed.
func (b *Bus) deliverAllSignals() {
	b.mu.Lock()
	sigs := make([]Signal, 0, len(b.signalled))
	for sig := range b.signalled {
		sigs = append(sigs, sig)
	}
	b.mu.Unlock()
	for _, sig := range sigs {
		b.deliverSignal(sig)
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

// PublishFeed announces a feed's new state.
func (b *Bus) PublishFeed(f *store.Feed) {
	if f == nil {
		return
	}
	cp := *f
	b.Publish(Event{FeedID: f.ID, Feed: &cp})
}
