package events

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tifeeds/tifeeds/store"
)

// EventChannel is the PostgreSQL NOTIFY channel that carries feed events
// between the tifeeds instances sharing one database.
const EventChannel = "tifeeds_events"

// Defaults of FanoutOptions.
const (
	DefaultFanoutQueue      = 1024
	DefaultFanoutMinBackoff = 100 * time.Millisecond
	DefaultFanoutMaxBackoff = 30 * time.Second
)

// notifyTimeout bounds one pg_notify, so a stuck database delays the queue
// instead of stopping it.
const notifyTimeout = 5 * time.Second

// flushTimeout bounds how long Stop spends sending what is still queued.
const flushTimeout = 3 * time.Second

// Kinds of notice; a notice says what changed, never the feed itself.
const (
	noticeFeed     = "feed"
	noticeProgress = "progress"
	noticeRevoke   = "revoke"
	noticeDeleted  = "deleted"
	// noticeSignal carries an Event's Signal.
	noticeSignal = "signal"
)

// notice is the NOTIFY payload. It stays far below PostgreSQL's 8000-byte
// cap: a feed row (description, URLs) could pass it, so receivers re-read
// the feed from the store instead.
type notice struct {
	Instance string      `json:"i"`
	Kind     string      `json:"k"`
	FeedID   int64       `json:"f"`
	Progress *Progress   `json:"p,omitempty"`
	Revoke   *Revocation `json:"r,omitempty"`
	Signal   Signal      `json:"s,omitempty"`
}

// FanoutStore is what a Fanout needs of the store: the notify and listen
// halves of PostgreSQL's NOTIFY, and the feeds, which notices name without
// carrying them.
type FanoutStore interface {
	SharesEvents() bool
	NotifyEvent(ctx context.Context, channel, payload string) error
	ListenEvents(ctx context.Context, channel, applicationName string) (*store.EventListener, error)
	Feed(ctx context.Context, id int64) (*store.Feed, error)
}

// FanoutOptions configure a Fanout.
type FanoutOptions struct {
	Store FanoutStore
	Bus   *Bus
	Log   *slog.Logger
	// Queue is how many events may wait to be notified before new ones are
	// dropped.
	Queue int
	// MinBackoff and MaxBackoff bound the wait before the listener
	// reconnects; it doubles on each failure in a row.
	MinBackoff, MaxBackoff time.Duration
}

// Fanout carries the events of a Bus to the other tifeeds instances that
// share its PostgreSQL database, and theirs to it: each event published on
// the bus is sent with pg_notify, and a listener on a dedicated connection
// republishes the events of other instances on the bus. Publishing never
// waits for the database: events go through a bounded queue and are dropped
// (and logged) when it is full. On SQLite, where one process owns the
// database, it does nothing.
//
// NOTIFY is not durable: events sent while a listener reconnects are lost
// to it. Subscribers see the next change of the feed.
type Fanout struct {
	st       FanoutStore
	bus      *Bus
	log      *slog.Logger
	opts     FanoutOptions
	instance string
	queue    chan Event
	dropped  atomic.Int64

	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewFanout returns a Fanout for the bus; Start begins relaying.
func NewFanout(o FanoutOptions) (*Fanout, error) {
	if o.Store == nil || o.Bus == nil {
		return nil, errors.New("events: a fanout needs a store and a bus")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Queue <= 0 {
		o.Queue = DefaultFanoutQueue
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultFanoutMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultFanoutMaxBackoff, o.MinBackoff)
	}
	return &Fanout{
		st: o.Store, bus: o.Bus, log: o.Log, opts: o,
		instance: rand.Text()[:16],
		queue:    make(chan Event, o.Queue),
	}, nil
}

// Instance returns the id that tags this instance's notices; its listener
// connection is named "tifeeds-events <id>" in pg_stat_activity.
func (f *Fanout) Instance() string { return f.instance }

// ApplicationName is the application_name of the listener connection.
func (f *Fanout) ApplicationName() string { return "tifeeds-events " + f.instance }

// Start begins relaying the bus's events until ctx ends or Stop. It does
// nothing on SQLite.
func (f *Fanout) Start(ctx context.Context) {
	if !f.st.SharesEvents() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	f.cancel = cancel
	f.bus.mu.Lock()
	f.bus.relay = f.enqueue
	f.bus.mu.Unlock()
	f.wg.Add(2)
	go func() {
		defer f.wg.Done()
		f.send(ctx)
	}()
	go func() {
		defer f.wg.Done()
		f.listen(ctx)
	}()
}

// Stop stops listening, sends what is still queued (for a few seconds at
// most) and detaches from the bus.
func (f *Fanout) Stop() {
	f.mu.Lock()
	cancel := f.cancel
	f.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	f.wg.Wait()
	f.bus.mu.Lock()
	f.bus.relay = nil
	f.bus.mu.Unlock()
}

// enqueue is the bus's relay: it runs inside Publish, so it never waits.
func (f *Fanout) enqueue(ev Event) {
	select {
	case f.queue <- ev:
	default:
		if n := f.dropped.Add(1); n == 1 || n%100 == 0 {
			f.log.Warn("Dropped a feed event for other instances: the notify queue is full",
				"feed_id", ev.FeedID, "count", n)
		}
	}
}

// send notifies the queued events in order until ctx ends, then flushes
// what is left.
func (f *Fanout) send(ctx context.Context) {
	for {
		select {
		case ev := <-f.queue:
			f.notify(ctx, ev)
		case <-ctx.Done():
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
			defer cancel()
			for {
				select {
				case ev := <-f.queue:
					if flush.Err() != nil {
						return
					}
					f.notify(flush, ev)
				default:
					return
				}
			}
		}
	}
}

func (f *Fanout) notify(ctx context.Context, ev Event) {
	payload, err := encodeNotice(f.instance, ev)
	if err != nil {
		f.log.Error("Unable to encode a feed event", "feed_id", ev.FeedID, "error", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	if err := f.st.NotifyEvent(ctx, EventChannel, string(payload)); err != nil {
		f.log.Warn("Unable to send a feed event to other instances", "feed_id", ev.FeedID, "error", err)
	}
}

func encodeNotice(instance string, ev Event) ([]byte, error) {
	n := notice{Instance: instance, Kind: noticeFeed, FeedID: ev.FeedID}
	if ev.Revocation != nil {
		n.Kind = noticeRevoke
		n.Revoke = ev.Revocation
	}
	if ev.Progress != nil {
		n.Kind = noticeProgress
		n.Progress = ev.Progress
	}
	if ev.Deleted {
		n.Kind = noticeDeleted
	}
	if ev.Signal != "" {
		n.Kind = noticeSignal
		n.Signal = ev.Signal
	}
	return json.Marshal(n)
}

// listen keeps a listener connection up until ctx ends, reconnecting with
// a doubling backoff.
func (f *Fanout) listen(ctx context.Context) {
	backoff := f.opts.MinBackoff
	for {
		err := f.listenOnce(ctx, func() {
			backoff = f.opts.MinBackoff
			// Signals notified while no listener was up are lost: what
			// was cached meanwhile may be stale.
			f.bus.deliverAllSignals()
		})
		if ctx.Err() != nil {
			return
		}
		f.log.Warn("Lost the connection listening for other instances' events; reconnecting",
			"error", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, f.opts.MaxBackoff)
	}
}

// listenOnce listens on a connection of its own and republishes notices
// until the connection fails or ctx ends. listening is called once LISTEN
// succeeded.
func (f *Fanout) listenOnce(ctx context.Context, listening func()) error {
	l, err := f.st.ListenEvents(ctx, EventChannel, f.ApplicationName())
	if err != nil {
		return err
	}
	defer l.Close()
	listening()
	for {
		payload, err := l.Next(ctx)
		if err != nil {
			return err
		}
		f.receive(ctx, payload)
	}
}

// receive republishes another instance's notice on the local bus only, so
// it is not sent back out. A feed notice is completed with the feed as the
// store has it now.
func (f *Fanout) receive(ctx context.Context, payload string) {
	var n notice
	if err := json.Unmarshal([]byte(payload), &n); err != nil || n.FeedID == 0 && n.Kind != noticeRevoke && n.Kind != noticeSignal {
		f.log.Warn("Ignored a malformed feed event from another instance", "error", err, "payload", payload)
		return
	}
	if n.Instance == f.instance {
		return // delivered locally when it was published
	}
	switch n.Kind {
	case noticeRevoke:
		if n.Revoke != nil {
			f.bus.deliverRevocation(*n.Revoke)
		}
		return
	case noticeSignal:
		f.bus.deliverSignal(n.Signal)
		return
	}
	ev := Event{FeedID: n.FeedID}
	switch n.Kind {
	case noticeProgress:
		if n.Progress == nil {
			return
		}
		ev.Progress = n.Progress
	case noticeDeleted:
		ev.Deleted = true
	case noticeFeed:
		feed, err := f.st.Feed(ctx, n.FeedID)
		if errors.Is(err, store.ErrNotFound) {
			ev.Deleted = true // deleted since: a run of it here stops
			break
		}
		if err != nil {
			f.log.Warn("Unable to read a feed changed by another instance", "feed_id", n.FeedID, "error", err)
			return
		}
		ev.Feed = feed
	default:
		return // a kind from a newer version
	}
	f.bus.deliver(ev)
}
