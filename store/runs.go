package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// FeedRun is the record of one fetch of a feed.
type FeedRun struct {
	bun.BaseModel `bun:"table:feed_runs"`

	ID        int64      `bun:"id,pk,autoincrement"`
	FeedID    int64      `bun:"feed_id,notnull"`
	StartedAt time.Time  `bun:"started_at,notnull"`
	EndedAt   *time.Time `bun:"ended_at"`
	Fetched   int64      `bun:"fetched,notnull"`
	Stored    int64      `bun:"stored,notnull"`
	// Added counts the stored sightings that were new to the feed (not a
	// re-report of one it has): what the daily limit counts.
	Added       int64       `bun:"added,notnull"`
	Rejected    int64       `bun:"rejected,notnull"`
	Rejections  []Rejection `bun:"rejections,type:json"`
	ErrorKind   string      `bun:"error_kind,notnull"`
	ErrorDetail string      `bun:"error_detail,notnull"`
	Note        string      `bun:"note,notnull"`
	// The progress of a kind written at a constant rate (RISK_LIST) after
	// the run: rows of its current lists written so far (over this run and
	// the ones before) of their total, and when the rest is expected in;
	// zero and nil for the other kinds.
	BacklogWritten     int64      `bun:"backlog_written,notnull"`
	BacklogTotal       int64      `bun:"backlog_total,notnull"`
	ExpectedCompletion *time.Time `bun:"expected_completion"`
}

// Rejection is one input record a run could not use.
type Rejection struct {
	Position int64  `json:"position"`
	Reason   string `json:"reason"`
}

// MaxRejections is how many rejected records a run keeps with their reasons.
const MaxRejections = 20

// StartRun records the start of a run. The first run of a feed (one that
// never finished a run) shows Initializing, in the same transaction. A feed
// that is gone is ErrNotFound.
func (s *Store) StartRun(ctx context.Context, feedID int64, now time.Time) (*FeedRun, error) {
	run := &FeedRun{FeedID: feedID, StartedAt: now.UTC(), Rejections: []Rejection{}}
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// Locked first, as FinishRun and batches lock it; a feed deleted
		// meanwhile (on another instance) is not found rather than a
		// broken foreign key.
		if _, err := feedForUpdate(ctx, tx, s.Dialect, feedID); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(run).Returning("id").Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to start a run of feed %d: %w", feedID, err)
		}
		_, err := tx.NewUpdate().Model((*Feed)(nil)).
			Set("status_message = ?", MessageInitializing).
			Where("id = ? AND enabled AND last_run_at IS NULL", feedID).Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to mark feed %d initializing: %w", feedID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return run, nil
}

// FinishRun records the end of run and, in the same transaction, the feed
// state it leaves: the status message (unless the feed was disabled
// meanwhile), the last run time, and the last ingestion when it stored
// anything. Only the feed's newest run sets its state: closing an older run
// (one whose instance died, closed after a newer run) leaves the feed as
// the newer run made it. A run already closed (by an instance that found its
// owner gone) or erased (by a reset) is not changed: FinishRun returns the
// feed as it is, with ErrRunClosed.
func (s *Store) FinishRun(ctx context.Context, run *FeedRun, message string) (*Feed, error) {
	end := time.Now().UTC()
	if run.EndedAt == nil {
		run.EndedAt = &end
	}
	if run.Rejections == nil {
		run.Rejections = []Rejection{}
	}
	if len(run.Rejections) > MaxRejections {
		run.Rejections = run.Rejections[:MaxRejections]
	}
	var out *Feed
	closed := false
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// The feed's row is locked first, as a batch and a reset lock it,
		// so that they never wait on each other in opposite orders.
		f, err := feedForUpdate(ctx, tx, s.Dialect, run.FeedID)
		if err != nil {
			return err
		}
		out = f
		res, err := tx.NewUpdate().Model(run).WherePK().Where("ended_at IS NULL").
			Column("ended_at", "fetched", "stored", "added", "rejected", "rejections", "error_kind", "error_detail", "note",
				"backlog_written", "backlog_total", "expected_completion").
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to finish run %d: %w", run.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			closed = true
			return nil
		}
		newer, err := tx.NewSelect().Model((*FeedRun)(nil)).
			Where("feed_id = ? AND id > ?", run.FeedID, run.ID).Exists(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to look for runs of feed %d after run %d: %w", run.FeedID, run.ID, err)
		}
		if newer {
			return nil
		}
		f.LastRunAt = run.EndedAt
		if f.Enabled {
			f.StatusMessage = message
		}
		if run.Stored > 0 {
			f.LastIngestion = run.EndedAt
		}
		f.UpdatedAt = end
		if _, err := tx.NewUpdate().Model(f).WherePK().
			Column("status_message", "last_run_at", "last_ingestion", "updated_at").Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to update feed %d after run %d: %w", f.ID, run.ID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if closed {
		return out, fmt.Errorf("store: run %d of feed %d: %w", run.ID, run.FeedID, ErrRunClosed)
	}
	return out, nil
}

// UpdateRunProgress saves a running run's counters, so that a crash still
// leaves them and the daily limit counts what was stored.
func (s *Store) UpdateRunProgress(ctx context.Context, run *FeedRun) error {
	if run.Rejections == nil {
		run.Rejections = []Rejection{}
	}
	_, err := s.DB.NewUpdate().Model(run).WherePK().
		Column("fetched", "stored", "added", "rejected", "rejections").Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to save the progress of run %d: %w", run.ID, err)
	}
	return nil
}

// UnfinishedRuns lists runs that have no end: runs going on in another
// instance, or runs a crash interrupted.
func (s *Store) UnfinishedRuns(ctx context.Context) ([]FeedRun, error) {
	var runs []FeedRun
	if err := s.reader().NewSelect().Model(&runs).Where("ended_at IS NULL").Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to list unfinished runs: %w", err)
	}
	return runs, nil
}

// FeedRuns lists a feed's runs, newest first.
func (s *Store) FeedRuns(ctx context.Context, feedID int64, limit int) ([]FeedRun, error) {
	var runs []FeedRun
	err := s.reader().NewSelect().Model(&runs).Where("feed_id = ?", feedID).
		Order("started_at DESC", "id DESC").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: unable to list the runs of feed %d: %w", feedID, err)
	}
	return runs, nil
}

// LastRun returns the feed's newest run, or ErrNotFound when it never ran.
func (s *Store) LastRun(ctx context.Context, feedID int64) (*FeedRun, error) {
	runs, err := s.FeedRuns(ctx, feedID, 1)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("store: runs of feed %d: %w", feedID, ErrNotFound)
	}
	return &runs[0], nil
}

// PruneFeedRuns deletes the records of runs that ended before cutoff,
// keeping each feed's newest keep runs whatever their age, so that the run
// history does not grow without bound and every feed still shows its
// latest runs.
func (s *Store) PruneFeedRuns(ctx context.Context, cutoff time.Time, keep int) (int64, error) {
	res, err := s.DB.ExecContext(ctx, `DELETE FROM feed_runs WHERE ended_at < ? AND id NOT IN (
		SELECT recent.id FROM feed_runs AS recent WHERE recent.feed_id = feed_runs.feed_id
		ORDER BY recent.started_at DESC, recent.id DESC LIMIT ?)`, cutoff.UTC(), keep)
	if err != nil {
		return 0, fmt.Errorf("store: unable to prune old feed runs: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// AddedSince sums the sightings new to the feed that its runs started at or
// after since stored; the daily ingestion limit is counted with it, so that
// re-reporting what the feed already has (an unchanged file run again) uses
// none of it.
func (s *Store) AddedSince(ctx context.Context, feedID int64, since time.Time) (int64, error) {
	var n sql.NullInt64
	err := s.reader().NewSelect().Model((*FeedRun)(nil)).ColumnExpr("SUM(added)").
		Where("feed_id = ? AND started_at >= ?", feedID, since.UTC()).Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("store: unable to count what feed %d added: %w", feedID, err)
	}
	return n.Int64, nil
}
