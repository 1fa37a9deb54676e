package graph

import (
	"context"
	"strconv"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

// progressHeartbeat is how often feedRunProgress repeats the counters of a
// run in flight when the runner has nothing new, so a client sees at least
// one event a second while a run goes on.
const progressHeartbeat = time.Second

// subscriptionBuffer is how far a websocket client may lag before events
// are dropped for it; ingestion never waits for a client.
const subscriptionBuffer = 64

// feedStatusChanged streams a feed each time its status, message, enabled
// flag or last ingestion changes.
func (r *Resolver) feedStatusChanged(ctx context.Context, feedID *string) (<-chan *store.Feed, error) {
	events, cancel, err := r.subscribe(ctx, feedID)
	if err != nil {
		return nil, err
	}
	out := make(chan *store.Feed, subscriptionBuffer)
	go func() {
		defer close(out)
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-events:
				if !ok {
					return // the bus dropped us for lagging: the client resubscribes
				}
				if ev.Feed == nil {
					continue
				}
				select {
				case out <- ev.Feed:
				default: // the client is not reading; skip rather than block the bus
				}
			}
		}
	}()
	return out, nil
}

// feedRunProgress streams run counters: every update the runner publishes,
// a repeat of the last one each second while the run goes on, and a final
// event with done set.
func (r *Resolver) feedRunProgress(ctx context.Context, feedID *string) (<-chan *model.FeedRunProgress, error) {
	events, cancel, err := r.subscribe(ctx, feedID)
	if err != nil {
		return nil, err
	}
	out := make(chan *model.FeedRunProgress, subscriptionBuffer)
	go func() {
		defer close(out)
		defer cancel()
		ticker := time.NewTicker(progressHeartbeat)
		defer ticker.Stop()
		running := map[int64]*model.FeedRunProgress{} // by run id
		send := func(p *model.FeedRunProgress) {
			select {
			case out <- p:
			default:
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-events:
				if !ok {
					return
				}
				if ev.Deleted {
					// A deleted feed's runs end with it. Their final event
					// normally says so first; this covers one lost between
					// instances, which would otherwise repeat for as long
					// as the client stays.
					for runID, p := range running {
						if p.FeedID == strconv.FormatInt(ev.FeedID, 10) {
							delete(running, runID)
						}
					}
					continue
				}
				if ev.Progress == nil {
					continue
				}
				p := progressModel(ev.Progress)
				if ev.Progress.Done {
					delete(running, ev.Progress.RunID)
				} else {
					running[ev.Progress.RunID] = p
				}
				send(p)
			case <-ticker.C:
				for _, p := range running {
					cp := *p
					send(&cp)
				}
			}
		}
	}()
	return out, nil
}

func progressModel(p *events.Progress) *model.FeedRunProgress {
	var total *int
	if p.DownloadTotal > 0 {
		t := int(p.DownloadTotal)
		total = &t
	}
	return &model.FeedRunProgress{
		Downloaded:    int(p.Downloaded),
		DownloadTotal: total,
		FeedID:        strconv.FormatInt(p.FeedID, 10),
		RunID:         strconv.FormatInt(p.RunID, 10),
		Fetched:       int(p.Fetched),
		Stored:        int(p.Stored),
		Rejected:      int(p.Rejected),
		Done:          p.Done,
		ErrorKind:     p.ErrorKind,
	}
}

// subscribe listens on the event bus to one feed (which must exist) or,
// when feedID is absent, to all of them.
func (r *Resolver) subscribe(ctx context.Context, feedID *string) (<-chan events.Event, func(), error) {
	id, err := optionalID("feedId", feedID)
	if err != nil {
		return nil, nil, err
	}
	if id != 0 {
		if _, err := r.Store.Feed(ctx, id); err != nil {
			return nil, nil, err
		}
	}
	events, cancel := r.Events.Subscribe(id)
	return events, cancel, nil
}

// optionalID reads an optional numeric id argument; absent is 0.
func optionalID(field string, id *string) (int64, error) {
	if id == nil {
		return 0, nil
	}
	return parseID(field, *id)
}
