package ingest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// sinkBatchSize is how many indicators go in one transaction unless
// BatchOptions says otherwise. Measured with make bench (docs/benchmarks.md):
// on SQLite each commit writes every page the batch changed to the WAL, and
// 20,000 wrote a third less than 5,000 (0.9 against 1.4 GB for 1,000,000
// IoCs) for 20-30 MB more memory; a transaction still takes well under a
// second. It matches the runner's DefaultBatchSize; checkpoints in between
// (the TSV source's every 5,000 lines) ride with the batch.
const sinkBatchSize = 20000

// maxNearStep bounds the writes near a limit of new sightings that grow
// while they find nothing new, and so by how much a run may pass it.
const maxNearStep = 256

// BatchOptions tunes a BatchSink.
type BatchOptions struct {
	BatchSize int   // indicators per transaction; sinkBatchSize when 0
	Limit     int64 // most indicators to store this run; 0 = no limit
	// AddLimit is the most sightings new to the feed to store this run (the
	// rest of the daily limit); 0 = no limit. Re-reports of sightings the
	// feed has are stored without counting against it.
	AddLimit  int64
	Retention time.Duration
	Now       func() time.Time // time.Now when nil
	// Allowlist, when set, drops the indicators it matches: each is counted
	// as rejected with the entry that matched.
	Allowlist allowlist.Matcher
	// Watch, when set, is asked whether each indicator covers a watched
	// asset; those that do are written with their batch (as pending asset
	// sightings) and Watch is told once the batch is committed.
	Watch AssetWatch
	// OnProgress is called after each batch is written (live progress),
	// on the goroutine that wrote it; calls never overlap.
	OnProgress func(RunStats)
}

// AssetWatch is what ingestion knows of the tenant asset watch (package
// notify): a fast question asked of every indicator. The indicators that
// answer yes are written in their batch's transaction (store.Batch.Watched)
// for the watch to match, so a crash loses none; Sighted, called once such
// a batch has committed, only wakes the watch and must not block.
type AssetWatch interface {
	Covers(kind ioc.Kind, value string) bool
	Sighted()
}

// watched is an indicator of the buffer that covers an asset, at its place
// in the buffer.
type watched struct {
	at  int
	ind ioc.Indicator
}

// RunStats counts what a run read and stored.
type RunStats struct {
	Fetched, Stored, Rejected int64 // Fetched = records read (good + rejected)
	Added                     int64 // of Stored, the sightings new to the feed
	Rejections                []store.Rejection
	LimitReached              bool
}

// BatchSink implements ioc.Sink over the store: it buffers indicators and
// writes them with the store every BatchSize, in one transaction a batch.
// Checkpoint records its cursor, which goes with the next batch written:
// that batch holds everything handed over before the checkpoint (and maybe
// more), so the stored cursor never runs ahead of the stored data. Once
// Limit indicators are stored, Indicator returns source.ErrLimitReached.
//
// Writes are pipelined: a full batch is written by a goroutine of its own
// while the source goes on filling the next one, so parsing and writing use
// two cores. At most one batch is being written at a time, and batches
// commit in the order they were handed over. A write's error is returned by
// the next Indicator that fills a batch, Checkpoint, Flush or Settle; the
// failed batch is kept and written again by the next of those, before
// anything after it. Flush returns once everything is written; Settle, for
// a run that failed, writes what came before the last checkpoint and drops
// the rest. Near Limit, batches are written synchronously so that the limit
// is exact. A BatchSink is used by one goroutine; Stats may be called from
// any.
type BatchSink struct {
	// The list, download and backlog reports are the runner's (safeSink):
	// a BatchSink only writes.
	source.SinkBase
	st     *store.Store
	feedID int64
	runID  int64
	opts   BatchOptions

	buf      []ioc.Indicator
	buffered int64 // indicators in buf that store a sighting (not revocations)
	// rulePositions are the run positions (Fetched) of the rules in buf, by
	// their place in it: the store may reject a rule (another feed owns its
	// sid), and the run's rejection names the rule's position.
	rulePositions map[int]int64
	// watched are the indicators of buf that cover an asset (opts.Watch).
	watched []watched

	// The last checkpoint not written yet: its cursor, and buf and buffered
	// as they were then.
	cursor     *string
	cpLen      int
	cpBuffered int64

	inflight *write // being written, or failed and waiting to be written again
	// nearStep is the least a write near AddLimit holds; it grows while
	// those writes add nothing new.
	nearStep int64

	mu      sync.Mutex // guards stats, which Stats may read from another goroutine, and unsaved
	stats   RunStats
	unsaved int64 // indicators handed over and not written yet that may store a sighting
}

// write is one batch handed to a writer goroutine.
type write struct {
	batch         *store.PreparedBatch
	buffered      int64 // upper bound of what it stores (BatchSink.unsaved)
	rulePositions map[int]int64
	watched       bool          // it writes pending asset sightings
	done          chan struct{} // closed when the attempt ends
	err           error         // the attempt's error, once done is closed
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

// Indicator buffers ind, handing the buffer to the writer when it is full,
// or writing it at once when the limit may be reached.
func (b *BatchSink) Indicator(ctx context.Context, ind ioc.Indicator) error {
	b.mu.Lock()
	reached := b.stats.LimitReached
	if !reached {
		b.stats.Fetched++
	}
	position := b.stats.Fetched
	b.mu.Unlock()
	if reached {
		return source.ErrLimitReached
	}
	if b.opts.Allowlist != nil && !ind.Revoked {
		if m, ok := b.opts.Allowlist.Match(ind.Kind, ind.Value); ok {
			b.allowlisted(m)
			return nil
		}
	}
	b.buf = append(b.buf, detach(ind))
	if !ind.Revoked {
		if b.opts.Watch != nil && b.opts.Watch.Covers(ind.Kind, ind.Value) {
			b.watched = append(b.watched, watched{at: len(b.buf) - 1, ind: b.buf[len(b.buf)-1]})
		}
		b.buffered++
		if ind.Kind == ioc.Rule {
			if b.rulePositions == nil {
				b.rulePositions = map[int]int64{}
			}
			b.rulePositions[len(b.buf)-1] = position
		}
	}
	if b.nearLimit() {
		// What is stored decides whether the limit is reached, and only a
		// written batch says how many of its indicators were new sightings.
		added := b.added()
		if err := b.Flush(ctx); err != nil {
			return err
		}
		if b.limitUsed() {
			b.mu.Lock()
			b.stats.LimitReached = true
			b.mu.Unlock()
			return source.ErrLimitReached
		}
		if b.added() == added {
			// Nothing new: re-reports of known sightings. Writing one at a
			// time up to the limit would take a transaction each; the
			// writes near it grow instead (to maxNearStep), at the cost of
			// passing the limit by less than one of them when new ones
			// follow.
			b.nearStep = min(max(2*b.nearStep, 2), maxNearStep, int64(b.opts.BatchSize))
		} else {
			b.nearStep = 0
		}
		return nil
	}
	if len(b.buf) < b.opts.BatchSize {
		return nil
	}
	return b.handOver(ctx)
}

// detach returns ind with a value and tags of its own, in one allocation.
// The sink keeps what it is handed until its batch is written (two batches
// of 20,000 at a time: one filling, one being written), and a source may
// hand over substrings of a larger input: encoding/csv makes every field of
// a record a substring of one string holding the whole row, so a risk-list
// value pinned its row and a few hundred bytes of EvidenceDetails JSON
// (15 MB of a 126 MB peak RSS in make bench). A rule's Text is the rule
// itself, kept as it is.
func detach(ind ioc.Indicator) ioc.Indicator {
	n := len(ind.Value)
	for _, t := range ind.Tags {
		n += len(t)
	}
	var sb strings.Builder
	sb.Grow(n)
	sb.WriteString(ind.Value)
	for _, t := range ind.Tags {
		sb.WriteString(t)
	}
	s := sb.String()
	ind.Value, s = s[:len(ind.Value)], s[len(ind.Value):]
	if len(ind.Tags) > 0 {
		tags := make([]string, len(ind.Tags))
		for i, t := range ind.Tags {
			tags[i], s = s[:len(t)], s[len(t):]
		}
		ind.Tags = tags
	}
	return ind
}

// Rejected counts a record the source could not use, keeping the first
// store.MaxRejections reasons.
func (b *BatchSink) Rejected(position int64, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stats.Fetched++
	b.stats.Rejected++
	if len(b.stats.Rejections) < store.MaxRejections {
		b.stats.Rejections = append(b.stats.Rejections, store.Rejection{Position: position, Reason: reason})
	}
}

// allowlisted counts an indicator the allowlist dropped as rejected (it
// was counted as fetched already), at its position in the run.
func (b *BatchSink) allowlisted(m allowlist.Match) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stats.Rejected++
	if len(b.stats.Rejections) < store.MaxRejections {
		b.stats.Rejections = append(b.stats.Rejections, store.Rejection{Position: b.stats.Fetched, Reason: m.Reason()})
	}
}

// Checkpoint records that everything handed over so far comes before
// cursor. The cursor commits with the next batch written, which holds all
// of it. It returns the error of an earlier write, if any.
func (b *BatchSink) Checkpoint(ctx context.Context, cursor string) error {
	if b.failed() {
		if err := b.retry(ctx); err != nil {
			return err
		}
	}
	b.cursor, b.cpLen, b.cpBuffered = &cursor, len(b.buf), b.buffered
	return nil
}

// Flush writes what is buffered, with the last checkpoint's cursor, and
// returns once everything is written, with the first error.
func (b *BatchSink) Flush(ctx context.Context) error {
	if err := b.handOver(ctx); err != nil {
		return err
	}
	return b.settle()
}

// Settle ends the writing of a run that failed: what came before the last
// checkpoint is written with its cursor, what came after it is dropped, and
// Settle returns once nothing is being written, with the first error. The
// run can then record its end.
func (b *BatchSink) Settle(ctx context.Context) error {
	if b.cursor != nil {
		for at := range b.rulePositions {
			if at >= b.cpLen {
				delete(b.rulePositions, at)
			}
		}
		b.watched = slices.DeleteFunc(b.watched, func(w watched) bool { return w.at >= b.cpLen })
		clear(b.buf[b.cpLen:])
		b.buf, b.buffered = b.buf[:b.cpLen], b.cpBuffered
		return b.Flush(ctx)
	}
	clear(b.buf)
	b.buf, b.buffered, b.rulePositions, b.watched = b.buf[:0], 0, nil, nil
	return b.settle()
}

// handOver starts writing what is buffered, with the last checkpoint's
// cursor, once the write before it has succeeded (written again first if it
// failed).
func (b *BatchSink) handOver(ctx context.Context) error {
	if b.failed() {
		// The failed batch is written again first; what is buffered waits.
		if err := b.retry(ctx); err != nil {
			return err
		}
	}
	cursor := b.cursor
	if len(b.buf) == 0 && cursor == nil {
		return b.settle()
	}
	b.mu.Lock()
	fetched, rejected := b.stats.Fetched, b.stats.Rejected
	b.mu.Unlock()
	// Prepared while the batch before is being written.
	var watched []ioc.Indicator
	if len(b.watched) > 0 {
		watched = make([]ioc.Indicator, len(b.watched))
		for i, x := range b.watched {
			watched[i] = x.ind
		}
	}
	p, err := store.PrepareBatch(store.Batch{
		FeedID: b.feedID, RunID: b.runID, Retention: b.opts.Retention, Now: b.opts.Now(),
		Indicators: b.buf, Cursor: cursor, Fetched: fetched, Rejected: rejected, Watched: watched,
	})
	if err != nil {
		// Bad input: the buffer is kept, as a failed write's. The batch in
		// flight ends first, so that nothing is written after the caller
		// has been told the run failed.
		return errors.Join(err, b.settle())
	}
	if err := b.settle(); err != nil {
		// Written again, then this one, by the next hand-over.
		return err
	}
	// The prepared batch holds what it needs of the buffer, which is
	// filled again while the batch is written.
	w := &write{batch: p, buffered: b.buffered, rulePositions: b.rulePositions, watched: len(watched) > 0}
	b.rulePositions = nil
	b.watched = b.watched[:0]
	b.mu.Lock()
	b.unsaved += w.buffered
	b.mu.Unlock()
	clear(b.buf) // drop references to the values
	b.buf = b.buf[:0]
	b.buffered = 0
	b.cursor, b.cpLen, b.cpBuffered = nil, 0, 0
	b.start(ctx, w)
	return nil
}

// start writes w on a goroutine of its own.
func (b *BatchSink) start(ctx context.Context, w *write) {
	w.done, w.err = make(chan struct{}), nil
	b.inflight = w
	go func() {
		defer close(w.done)
		res, err := b.st.ApplyPrepared(ctx, w.batch)
		if err != nil {
			w.err = err
			return
		}
		b.mu.Lock()
		b.stats.Stored += int64(res.Stored)
		b.stats.Added += int64(res.Added)
		for _, r := range res.Rejections {
			b.stats.Rejected++
			if len(b.stats.Rejections) < store.MaxRejections {
				b.stats.Rejections = append(b.stats.Rejections, store.Rejection{Position: w.rulePositions[r.At], Reason: r.Reason})
			}
		}
		b.unsaved -= w.buffered
		stats := b.statsLocked()
		b.mu.Unlock()
		if w.watched {
			b.opts.Watch.Sighted()
		}
		if b.opts.OnProgress != nil {
			b.opts.OnProgress(stats)
		}
	}()
}

// settle waits for the write in flight. A failed one stays in flight, to be
// written again.
func (b *BatchSink) settle() error {
	w := b.inflight
	if w == nil {
		return nil
	}
	<-w.done
	if w.err != nil {
		return w.err
	}
	b.inflight = nil
	return nil
}

// failed reports whether the last write ended in an error.
func (b *BatchSink) failed() bool {
	if b.inflight == nil {
		return false
	}
	select {
	case <-b.inflight.done:
		return b.inflight.err != nil
	default:
		return false
	}
}

// retry writes the failed batch in flight again and waits for it.
func (b *BatchSink) retry(ctx context.Context) error {
	b.start(ctx, b.inflight)
	return b.settle()
}

// nearLimit reports whether what is buffered may use up a limit, counting
// an upper bound of what the batch being written stores.
func (b *BatchSink) nearLimit() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.opts.Limit; l > 0 && b.stats.Stored+b.unsaved+b.buffered >= l {
		return true
	}
	l := b.opts.AddLimit
	return l > 0 && b.stats.Added+b.unsaved+b.buffered >= l && b.buffered >= b.nearStep
}

// limitUsed reports whether what is stored used up a limit.
func (b *BatchSink) limitUsed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opts.Limit > 0 && b.stats.Stored >= b.opts.Limit ||
		b.opts.AddLimit > 0 && b.stats.Added >= b.opts.AddLimit
}

func (b *BatchSink) added() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats.Added
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
