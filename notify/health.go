package notify

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/store"
)

// DefaultHealthInterval is how often the health watch looks for feeds gone
// stale (feed changes on the bus are looked at as they come).
const DefaultHealthInterval = time.Minute

// StaleFactor times a feed's polling frequency is how long it may go
// without ingesting before it is stale, unless its threshold is set.
const StaleFactor = 3

// MaxStaleHours bounds a feed's staleness threshold (a year).
const MaxStaleHours = 24 * 365

// HealthStore is what the health watch needs of the store.
type HealthStore interface {
	EnabledFeeds(ctx context.Context) ([]store.Feed, error)
	Feed(ctx context.Context, id int64) (*store.Feed, error)
	FeedHealths(ctx context.Context) ([]store.FeedHealth, error)
	ChangeFeedHealth(ctx context.Context, feedID int64, from, to string, n store.Notification, now time.Time) (bool, error)
	SetStaleThreshold(ctx context.Context, feedID int64, seconds *int64, now time.Time) error
}

// Health watches the feeds and sends FEED_HEALTH to root's channels when
// one fails (its status message a failure), recovers, or goes without
// ingesting longer than its threshold. The state it last announced is in
// the store (feed_health): a change is announced once, by the instance
// whose conditional update moves it.
type Health struct {
	Store  HealthStore
	Bus    *events.Bus
	Worker *Worker
	Audit  *audit.Log
	Log    *slog.Logger
	Now    func() time.Time
	// Interval is how often stale feeds are looked for
	// (DefaultHealthInterval when 0).
	Interval time.Duration

	wg sync.WaitGroup
}

// Wait returns once Watch has ended.
func (h *Health) Wait() { h.wg.Wait() }

// HealthChange is the data of a FEED_HEALTH notification.
type HealthChange struct {
	FeedID   int64  `json:"feedId"`
	FeedName string `json:"feedName"`
	// State is the new state: "error", "stale" or "ok" (recovered).
	State string `json:"state"`
	// Previous is the state before.
	Previous string `json:"previous"`
	// Message is the feed's status message (the failure, for an error).
	Message       string     `json:"message"`
	LastIngestion *time.Time `json:"lastIngestion"`
	// StaleAfterHours is the threshold that was passed, for a stale feed.
	StaleAfterHours float64 `json:"staleAfterHours,omitempty"`
}

func (h *Health) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

func (h *Health) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// Threshold is how long f may go without ingesting: seconds when set, else
// StaleFactor times its polling frequency.
func Threshold(f *store.Feed, seconds *int64) time.Duration {
	if seconds != nil && *seconds > 0 {
		return time.Duration(*seconds) * time.Second
	}
	return time.Duration(StaleFactor*max(f.PollingFrequency, 1)) * time.Hour
}

// stateOf is the health of f at now.
func stateOf(f *store.Feed, threshold time.Duration, now time.Time) string {
	if store.IsFailureMessage(f.StatusMessage) {
		return store.HealthError
	}
	last := f.CreatedAt
	if f.LastIngestion != nil {
		last = *f.LastIngestion
	}
	if now.Sub(last) > threshold {
		return store.HealthStale
	}
	return store.HealthOK
}

// Check compares every enabled feed's health with the state last
// announced and announces the changes.
func (h *Health) Check(ctx context.Context) error {
	feeds, err := h.Store.EnabledFeeds(ctx)
	if err != nil {
		return err
	}
	rows, err := h.Store.FeedHealths(ctx)
	if err != nil {
		return err
	}
	known := make(map[int64]store.FeedHealth, len(rows))
	for _, r := range rows {
		known[r.FeedID] = r
	}
	now := h.now()
	woke := false
	for i := range feeds {
		f := &feeds[i]
		if f.StatusMessage == store.MessageStopped {
			// A run cut short by a restart or a disable says nothing of
			// the feed's health: the state stays until the next run.
			continue
		}
		row, ok := known[f.ID]
		from := store.HealthOK
		if ok {
			from = row.State
		}
		threshold := Threshold(f, row.StaleAfterSeconds)
		to := stateOf(f, threshold, now)
		if to == from {
			continue
		}
		change := HealthChange{FeedID: f.ID, FeedName: f.Name, State: to, Previous: from, Message: f.StatusMessage,
			LastIngestion: f.LastIngestion}
		if to == store.HealthStale {
			change.StaleAfterHours = threshold.Hours()
		}
		n := store.Notification{Event: store.EventFeedHealth, Body: envelope(store.EventFeedHealth, "", now, change)}
		moved, err := h.Store.ChangeFeedHealth(ctx, f.ID, from, to, n, now)
		if err != nil {
			return err
		}
		if moved {
			woke = true
			h.log().Info("Feed health changed", "feed_id", f.ID, "from", from, "to", to)
		}
	}
	if woke {
		h.Worker.Wake()
	}
	return nil
}

// Watch checks at every feed change on the bus (a run's end, here or on
// another instance) and every Interval, until ctx ends.
func (h *Health) Watch(ctx context.Context) {
	interval := h.Interval
	if interval <= 0 {
		interval = DefaultHealthInterval
	}
	evs, cancel := h.Bus.Subscribe(0)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer func() { cancel() }()
		t := time.NewTicker(interval)
		defer t.Stop()
		check := func() {
			if err := h.Check(ctx); err != nil && ctx.Err() == nil {
				h.log().Warn("Unable to check the feeds' health", "error", err)
			}
		}
		check()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-evs:
				if !ok {
					// Dropped for falling behind: subscribe again.
					evs, cancel = h.Bus.Subscribe(0)
					continue
				}
				if ev.Feed == nil && !ev.Deleted {
					continue // progress
				}
			case <-t.C:
			}
			check()
		}
	}()
}

// SetThreshold sets feed id's staleness threshold in hours (nil: the
// default, StaleFactor times its polling frequency). Root only (the
// resolver's directive).
func (h *Health) SetThreshold(ctx context.Context, feedID int64, hours *int) error {
	var seconds *int64
	if hours != nil {
		if *hours < 1 || *hours > MaxStaleHours {
			return store.Invalid("hours", "must be 1 to %d", MaxStaleHours)
		}
		s := int64(*hours) * 3600
		seconds = &s
	}
	f, err := h.Store.Feed(ctx, feedID)
	if err != nil {
		return err
	}
	if err := h.Store.SetStaleThreshold(ctx, feedID, seconds, h.now()); err != nil {
		return err
	}
	h.Audit.Record(ctx, audit.FeedHealthSet, audit.Target{Type: audit.TargetFeed, ID: strconv.FormatInt(f.ID, 10), Name: f.Name},
		map[string]any{"staleAfterHours": hours})
	return nil
}

// FeedHealthView is a feed's announced health and threshold.
type FeedHealthView struct {
	Feed         store.Feed
	State        string
	Threshold    time.Duration
	ThresholdSet bool
}

// List returns the announced health of every enabled feed.
func (h *Health) List(ctx context.Context) ([]FeedHealthView, error) {
	feeds, err := h.Store.EnabledFeeds(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := h.Store.FeedHealths(ctx)
	if err != nil {
		return nil, err
	}
	known := make(map[int64]store.FeedHealth, len(rows))
	for _, r := range rows {
		known[r.FeedID] = r
	}
	out := make([]FeedHealthView, len(feeds))
	for i := range feeds {
		r, ok := known[feeds[i].ID]
		state := store.HealthOK
		if ok {
			state = r.State
		}
		out[i] = FeedHealthView{Feed: feeds[i], State: state, Threshold: Threshold(&feeds[i], r.StaleAfterSeconds),
			ThresholdSet: r.StaleAfterSeconds != nil}
	}
	return out, nil
}

// View returns feed id's announced health.
func (h *Health) View(ctx context.Context, feedID int64) (*FeedHealthView, error) {
	all, err := h.List(ctx)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].Feed.ID == feedID {
			return &all[i], nil
		}
	}
	return nil, store.Invalid("feedId", "feed %d is not enabled: its health is not watched", feedID)
}
