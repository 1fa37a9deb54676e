package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tifeeds/tifeeds/store"
)

// noteUnchanged is the note of a run whose source said ioc.ErrUnchanged.
const noteUnchanged = "the list has not changed since the last run"

// completeLists gathers the snapshot lists a run read to their end
// (ioc.ListSink), to expire after the run succeeds what they no longer hold.
type completeLists struct {
	mu    sync.Mutex
	names []string
}

func (l *completeLists) add(source string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.names, source) {
		l.names = append(l.names, source)
	}
}

func (l *completeLists) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.names)
}

// ListComplete records a list the source read whole (ioc.ListSink).
func (s *safeSink) ListComplete(source string) {
	if s.lists != nil {
		s.lists.add(source)
	}
}

// expireLists expires, after a complete successful run of f that started
// with run, the sightings of each list named that the run did not see. It
// returns a note for the run: how many went, or why they did not.
func (r *Runner) expireLists(ctx context.Context, f *store.Feed, run *store.FeedRun, lists []string) string {
	var total int64
	for _, list := range lists {
		n, err := r.st.ExpireUnseen(ctx, f.ID, list, run.StartedAt)
		total += n
		if err != nil {
			r.log.Error("Unable to expire what a snapshot list dropped", "feed_id", f.ID, "run_id", run.ID, "list", list, "error", err)
			return fmt.Sprintf("what the list %s dropped was not expired (%v): the next complete run expires it", list, err)
		}
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("%d IoCs no longer listed expired (%s)", total, strings.Join(lists, ", "))
}
