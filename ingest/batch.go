package ingest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// ErrLimitReached is returned by BatchSink.Indicator once the run's limit of
// stored indicators is used up.
var ErrLimitReached = errors.New("ingest: ingestion limit reached")

// sinkBatchSize is how many indicators go in one transaction unless
// BatchOptions says otherwise. Measured with make bench (docs/benchmarks.md):
// 5,000 ingests about a third faster than 2,000 on PostgreSQL and the same
// on SQLite; larger batches hold the write lock longer for little gain.
// It matches the runner's DefaultBatchSize and the TSV source's checkpoint
// interval.
const sinkBatchSize = 5000

// MaxRejections is how many rejected records a run keeps with their reasons.
const MaxRejections = 20

// BatchOptions tunes a BatchSink.
type BatchOptions struct {
	BatchSize  int   // indicators per transaction; 5000 when 0
	Limit      int64 // most indicators to store this run; 0 = no limit
	Retention  time.Duration
	Now        func() time.Time // time.Now when nil
	OnProgress func(RunStats)   // called after each flush (live progress)
}

// RunStats counts what a run read and stored.
type RunStats struct {
	Fetched, Stored, Rejected int64 // Fetched = records read (good + rejected)
	Rejections                []store.Rejection
	LimitReached              bool
}

// BatchSink implements ioc.Sink over the store: it buffers indicators and
// writes them with store.ApplyBatch every BatchSize; Checkpoint flushes with
// the cursor, so the cursor and the data before it commit together. Once
// Limit indicators are stored, Indicator returns ErrLimitReached.
type BatchSink struct {
	st     *store.Store
	feedID int64
	runID  int64
	opts   BatchOptions

	buf      []ioc.Indicator
	buffered int64 // indicators in buf that store a sighting (not revocations)

	mu    sync.Mutex // guards stats, which Stats may read from another goroutine
	stats RunStats
}

// NewBatchSink returns a sink writing feedID's indicators, counting them on
// run runID (0 for none).
func NewBatchSink(st *store.Store, feedID, runID int64, opts BatchOptions) *BatchSink {
	if opts.BatchSize <= 0 {
		opts.BatchSize = sinkBatchSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &BatchSink{st: st, feedID: feedID, runID: runID, opts: opts,
		buf: make([]ioc.Indicator, 0, opts.BatchSize)}
}

// Indicator buffers ind, flushing when the buffer is full or when the
// limit may be reached.
func (b *BatchSink) Indicator(ctx context.Context, ind ioc.Indicator) error {
	b.mu.Lock()
	reached := b.stats.LimitReached
	if !reached {
		b.stats.Fetched++
	}
	b.mu.Unlock()
	if reached {
		return ErrLimitReached
	}
	b.buf = append(b.buf, ind)
	if !ind.Revoked {
		b.buffered++
	}
	limit := b.opts.Limit
	if len(b.buf) < b.opts.BatchSize && (limit <= 0 || b.stored()+b.buffered < limit) {
		return nil
	}
	if err := b.flush(ctx, nil); err != nil {
		return err
	}
	if limit > 0 && b.stored() >= limit {
		b.mu.Lock()
		b.stats.LimitReached = true
		b.mu.Unlock()
		return ErrLimitReached
	}
	return nil
}

// Rejected counts a record the source could not use, keeping the first
// MaxRejections reasons.
func (b *BatchSink) Rejected(position int64, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stats.Fetched++
	b.stats.Rejected++
	if len(b.stats.Rejections) < MaxRejections {
		b.stats.Rejections = append(b.stats.Rejections, store.Rejection{Position: position, Reason: reason})
	}
}

// Checkpoint writes what is buffered together with cursor, in one
// transaction.
func (b *BatchSink) Checkpoint(ctx context.Context, cursor string) error {
	return b.flush(ctx, &cursor)
}

// Flush writes what is buffered.
func (b *BatchSink) Flush(ctx context.Context) error { return b.flush(ctx, nil) }

func (b *BatchSink) flush(ctx context.Context, cursor *string) error {
	if len(b.buf) == 0 && cursor == nil {
		return nil
	}
	res, err := b.st.ApplyBatch(ctx, store.Batch{
		FeedID: b.feedID, RunID: b.runID, Retention: b.opts.Retention, Now: b.opts.Now(),
		Indicators: b.buf, Cursor: cursor,
	})
	if err != nil {
		// The buffer is kept: nothing of it was written, and a retry of
		// Flush writes it again.
		return err
	}
	clear(b.buf) // drop references to the values
	b.buf = b.buf[:0]
	b.buffered = 0
	b.mu.Lock()
	b.stats.Stored += int64(res.Stored)
	stats := b.statsLocked()
	b.mu.Unlock()
	if b.opts.OnProgress != nil {
		b.opts.OnProgress(stats)
	}
	return nil
}

func (b *BatchSink) stored() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats.Stored
}

// Stats returns the counts so far.
func (b *BatchSink) Stats() RunStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.statsLocked()
}

func (b *BatchSink) statsLocked() RunStats {
	s := b.stats
	s.Rejections = slices.Clone(s.Rejections)
	return s
}
