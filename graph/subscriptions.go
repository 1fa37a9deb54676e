package graph

import (
	"context"
	"strconv"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph/model"
)

// progressHeartbeat is how often feedRunProgress repeats the counters of a
// run in flight when the runner has nothing new, so a client sees at least
// one event a second while a run goes on.
const progressHeartbeat = time.Second

// subscriptionBuffer is how far a websocket client may lag before events
// are dropped for it; ingestion never waits for a client.
const subscriptionBuffer = 64

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
