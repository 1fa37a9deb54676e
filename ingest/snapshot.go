package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/store"
)

// noteUnchanged is the note of a run whose source said ioc.ErrUnchanged.
const noteUnchanged = "the list has not changed since the last run"

// completeLists gathers the snapshot lists a run read to their end
// (source.Sink.ListComplete), to expire after the run succeeds what
// they no longer hold.
type completeLists struct {
	mu    sync.Mutex
	lists []completeList
}

// completeList is a list read to its end: by this run alone (since zero),
// or by the runs since since (a list read over several polls).
type completeList struct {
	name  string
	since time.Time
}

func (l *completeLists) add(source string, since time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, c := range l.lists {
		if c.name == source {
			// Read whole twice in one run: the later reading holds.
			l.lists[i].since = since
			return
		}
	}
	l.lists = append(l.lists, completeList{name: source, since: since})
}

func (l *completeLists) list() []completeList {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lists)
}

// expireLists expires, after a complete successful run of f that started
// with run, the sightings of each list named that the run did not see (or,
// for a list read over several runs, that none of them saw). It returns a
// note for the run: how many went, or why they did not.
func (r *Runner) expireLists(ctx context.Context, f *store.Feed, run *store.FeedRun, lists []completeList) string {
	var total int64
	var names []string
	for _, l := range lists {
		list := l.name
		names = append(names, list)
		since := run.StartedAt
		if !l.since.IsZero() && l.since.Before(since) {
			since = l.since // what the walk's earlier runs handed over stays
		}
		n, err := r.st.ExpireUnseen(ctx, f.ID, list, since)
		total += n
		if err != nil {
			r.log.Error("Unable to expire what a snapshot list dropped", "feed_id", f.ID, "run_id", run.ID, "list", list, "error", err)
			return fmt.Sprintf("what the list %s dropped was not expired (%v): the next complete run expires it", list, err)
		}
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("%d IoCs no longer listed expired (%s)", total, strings.Join(names, ", "))
}
