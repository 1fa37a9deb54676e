package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/store"
)

// runLimits is what bounds one run of a feed. The run stops at the
// per-poll limit or the pace's share (what it stores) or at what is left
// of the daily limit (the sightings new to the feed that it stores:
// re-reporting what the feed has, as an unchanged file run again does,
// costs none of it), whichever comes first; the run's note says which.
// The source is told the first only: it cannot tell which of its
// indicators are new.
type runLimits struct {
	run      int64         // what the source is told (Request.Limit); 0: none
	runNote  func() string // the note when run ended the run
	pace     *constantRate // nil unless the kind writes at a constant rate
	daily    int64         // the kind's daily limit; 0: none
	added    int64         // what is left of it today; 0 when daily is 0
	resumeAt time.Time     // when the daily limit renews
}

// limits returns the limits of a run of f, of kind k, starting at now.
// spent is true when the daily limit is used up already: the run then
// does not fetch.
func (r *Runner) limits(ctx context.Context, f *store.Feed, k source.Kind, now time.Time) (l runLimits, spent bool, err error) {
	l.run = k.RunLimit
	l.runNote = func() string { return runLimitNote(k.RunLimit) }
	if l.pace = newConstantRate(k.Rate, r.interval(f)); l.pace != nil {
		if l.run == 0 || l.pace.share < l.run {
			l.run, l.runNote = l.pace.share, l.pace.note
		}
	}
	if k.DailyLimit > 0 {
		day := now.Truncate(24 * time.Hour)
		l.daily, l.resumeAt = k.DailyLimit, day.Add(24*time.Hour)
		used, err := r.st.AddedSince(ctx, f.ID, day)
		if err != nil {
			return l, false, err
		}
		l.added = k.DailyLimit - used
		if l.added <= 0 {
			return l, true, nil
		}
	}
	return l, false, nil
}

// dailyNote is the note of a run the daily limit ended, or kept from
// starting.
func (l runLimits) dailyNote() string { return limitNote(l.daily, l.resumeAt) }

// endNote says which limit ended a run that stored s: the sink tells by
// its counts.
func (l runLimits) endNote(s RunStats) string {
	if l.added > 0 && s.Added >= l.added {
		return l.dailyNote()
	}
	return l.runNote()
}

func runLimitNote(limit int64) string {
	return fmt.Sprintf("limit of %d IoCs per poll reached; the rest comes with the next poll", limit)
}

func limitNote(limit int64, resumeAt time.Time) string {
	return fmt.Sprintf("daily limit of %d IoCs reached; the rest waits until %s",
		limit, resumeAt.Format(time.RFC3339))
}
