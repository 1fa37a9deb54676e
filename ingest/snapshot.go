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
// (ioc.ListSink), to expire after the run succeeds what they no longer hold,
// each with the time its pass began when that was before the run
// (ioc.ListSinceSink: a list written at a constant rate over several runs).
type completeLists struct {
	mu    sync.Mutex
	names []string
	since map[string]time.Time
}

func (l *completeLists) add(source string, since time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.names, source) {
		l.names = append(l.names, source)
	}
	if !since.IsZero() {
		if l.since == nil {
			l.since = map[string]time.Time{}
		}
		l.since[source] = since
	}
}

func (l *completeLists) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.names)
}

// cutoff is when the pass over list began: its since, or the run's start.
func (l *completeLists) cutoff(list string, runStart time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.since[list]; ok && t.Before(runStart) {
		return t
	}
	return runStart
}

// ListComplete records a list the source read whole (ioc.ListSink).
func (s *safeSink) ListComplete(source string) {
	if s.lists != nil {
		s.lists.add(source, time.Time{})
	}
}

// ListCompleteSince records a list whose pass, begun at since, the source
// ended (ioc.ListSinceSink).
func (s *safeSink) ListCompleteSince(source string, since time.Time) {
	if s.lists != nil {
		s.lists.add(source, since)
	}
}

// expireLists expires, after a complete successful run of f that started
// with run, the sightings of each list named that the run (or, for a list
// written over several runs, its pass) did not see. It returns a note for
// the run: how many went, or why they did not.
func (r *Runner) expireLists(ctx context.Context, f *store.Feed, run *store.FeedRun, lists *completeLists) string {
	var total int64
	names := lists.list()
	for _, list := range names {
		n, err := r.st.ExpireUnseen(ctx, f.ID, list, lists.cutoff(list, run.StartedAt))
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
