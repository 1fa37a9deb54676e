package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/internal/background"
	"github.com/tifeeds/tifeeds/ioc"
)

// iocWriteLockID is the PostgreSQL advisory lock every transaction that
// changes sightings takes first. The aggregates of an IoC (score, tags,
// expiry) are computed from all its sightings; two feeds writing the same IoC
// at once would each compute them without the other's sighting. SQLite
// already has one writer; this gives PostgreSQL the same, per transaction
// (one batch), while readers are never blocked.
const iocWriteLockID = 0x7466656564730002

// Batch is a group of indicators from one feed, applied in one transaction.
type Batch struct {
	FeedID    int64
	Retention time.Duration // expiry = Now + Retention, unless Indicator.ValidUntil is set
	Now       time.Time
	// Indicators are normalised; Revoked ones delete that (feed, source)
	// sighting. Indicators whose expiry is not after Now are skipped.
	Indicators []ioc.Indicator
	Cursor     *string // when non-nil, feeds.cursor is set in the same transaction
	// RunID, when non-zero, is the run the batch belongs to: feed_runs.stored
	// += result.Stored (and added += result.Added) in the same transaction,
	// which fails with ErrRunClosed once that run was closed.
	RunID int64
	// Fetched and Rejected are the run's counts of records read and
	// rejected so far, saved with the batch (never lowered) so that a run
	// closed for its instance gone keeps what it reached.
	Fetched, Rejected int64
	// Watched are indicators of the batch that cover a tenant's asset (as
	// the asset watch's index says): they are written to
	// asset_sightings_pending in the batch's transaction, for the watch to
	// turn into hits (DrainAssetSightings). Expired ones are skipped.
	Watched []ioc.Indicator
}

// BatchResult counts what ApplyBatch changed: sightings stored, those of
// them new to the feed (Added; the others re-report a sighting it has), and
// sightings removed by revocation. Rejections are the indicators it refused
// to store: rules whose sid another feed owns (see claimRules).
type BatchResult struct {
	Stored, Added, Removed int
	Rejections             []BatchRejection
}

// BatchRejection is an indicator of a batch that was not stored: At is its
// place in Batch.Indicators.
type BatchRejection struct {
	At     int
	Reason string
}

// batchWriter is what ApplyBatch needs of a dialect.
type batchWriter interface {
	// insertNew inserts those of aggs whose (type, value) is not stored yet
	// and sets their id; the others are left alone, with id 0.
	insertNew(ctx context.Context, aggs []*aggregate) error
	// sightings returns every sighting of the stored IoCs named in keys (by
	// kind), and a row with feedID 0 for a stored IoC without any.
	sightings(ctx context.Context, keys map[ioc.Kind][]string) ([]storedSighting, error)
	// updateIoCs sets the aggregates of stored IoCs.
	updateIoCs(ctx context.Context, aggs []*aggregate) error
	// insertSightings writes stored sightings into sighting_rows as they
	// are: the inline sightings of IoCs that gain another.
	insertSightings(ctx context.Context, rows []storedSighting) error
	// upsertSightings writes the batch's sightings to sighting_rows, but
	// for the inline ones (their IoC's row holds them).
	upsertSightings(ctx context.Context, feedID int64, now int64, rows []pendingSighting) error
	deleteSightings(ctx context.Context, feedID int64, rows []storedSighting) (int, error)
	deleteIoCs(ctx context.Context, ids []int64) error
	// ruleTexts returns the stored texts of the Rule IoCs among ids with
	// their owners, and the name of feed feedID.
	ruleTexts(ctx context.Context, feedID int64, ids []int64) (map[int64]ruleText, string, error)
	exec(ctx context.Context, query string, args ...any) (int64, error)
}

// ApplyBatch upserts, in one transaction: one iocs row per (type, value); one
// sightings row per (ioc, feed, source); the aggregates of the touched IoCs
// (score = max of live sightings, tags = union, expires_at = latest sighting
// expiry, first_seen/last_seen = earliest/latest of the sightings); the
// feed's cursor when b.Cursor is set; the run's stored count when b.RunID is
// set; and feeds.last_ingestion = Now when anything was stored. Duplicates
// inside the batch are merged (the last one wins). Revoked indicators delete
// the feed's sighting; an IoC left without a live sighting is deleted.
func (s *Store) ApplyBatch(ctx context.Context, b Batch) (BatchResult, error) {
	p, err := PrepareBatch(b)
	if err != nil {
		return BatchResult{}, err
	}
	return s.ApplyPrepared(ctx, p)
}

// PreparedBatch is a Batch checked, merged and summarised by PrepareBatch,
// the part of ApplyBatch that needs no database, so that a caller can
// prepare a batch on one goroutine while another writes the one before.
type PreparedBatch struct {
	b       Batch // without Indicators, which upserts and revoked hold
	now     int64
	n       int // indicators in the batch
	upserts []pendingSighting
	revoked []sightKey
	fresh   []*aggregate // per IoC, from this batch alone; ordered by (kind, value)
	byKey   map[valKey]*aggregate
}

// PrepareBatch checks b and does what ApplyBatch does before it touches the
// database: merge repeats and summarise the batch per IoC. b.Indicators may
// be reused once it returns.
func PrepareBatch(b Batch) (*PreparedBatch, error) {
	if b.Now.IsZero() {
		b.Now = time.Now()
	}
	b.Now = dbTime(b.Now)
	now := micros(b.Now)
	upserts, revoked, err := dedupe(b, now)
	if err != nil {
		return nil, err
	}
	p := &PreparedBatch{b: b, now: now, n: len(b.Indicators), upserts: upserts, revoked: revoked}
	p.b.Indicators = nil
	// The aggregates each IoC would have from this batch alone: exact for
	// IoCs not stored yet, which on a first ingestion is all of them.
	p.byKey = make(map[valKey]*aggregate, len(upserts))
	// One allocation for the batch's aggregates: the slab never grows, so
	// pointers into it stay valid.
	slab := make([]aggregate, 0, len(upserts))
	p.fresh = make([]*aggregate, 0, len(upserts))
	for i := range upserts {
		u := &upserts[i]
		a, ok := p.byKey[u.valKey]
		if ok {
			a.feedID, a.source = 0, "" // a second source: rows
			a.add(u.score, u.tags, now, now, u.expires)
		} else {
			slab = append(slab, aggregate{valKey: u.valKey})
			a = &slab[len(slab)-1]
			a.startFrom(u, now, now)
			a.feedID, a.source = b.FeedID, u.source
			p.byKey[u.valKey] = a
			p.fresh = append(p.fresh, a)
		}
		u.agg = a
	}
	for _, a := range p.fresh {
		a.seal()
	}
	// A stable order keeps PostgreSQL's row locks in one order across writers.
	slices.SortFunc(p.fresh, func(x, y *aggregate) int { return cmpValKey(x.valKey, y.valKey) })
	return p, nil
}

// Len is how many indicators the batch had.
func (p *PreparedBatch) Len() int { return p.n }

// ApplyPrepared writes a prepared batch as ApplyBatch does, at the
// background's priority (background.Run). A batch that failed may be applied
// again.
func (s *Store) ApplyPrepared(ctx context.Context, p *PreparedBatch) (res BatchResult, err error) {
	background.Run(func() { res, err = s.applyPrepared(ctx, p) })
	return res, err
}

func (s *Store) applyPrepared(ctx context.Context, p *PreparedBatch) (BatchResult, error) {
	b := p.b
	var res BatchResult
	if len(p.upserts) == 0 && len(p.revoked) == 0 && b.Cursor == nil {
		return res, nil
	}
	defer s.writing()()
	if err := s.payKeyDebt(ctx); err != nil {
		return res, err
	}
	apply := func(ctx context.Context, w batchWriter) error {
		res = BatchResult{}
		r, err := applyBatch(ctx, w, p)
		res = r
		return err
	}
	var err error
	if s.Dialect == Postgres {
		err = s.pgTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(iocWriteLockID)); err != nil {
				return err
			}
			// A crash may lose the last batches committed, never part of
			// one: the cursor commits with its data, so the next run
			// resumes from what survived. Waiting for the WAL flush of every
			// batch would cost more than the batch itself.
			if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
				return err
			}
			return apply(ctx, &pgWriter{tx: tx, freshStreak: &s.pgFreshStreak})
		})
	} else {
		err = s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			return apply(ctx, &sqliteWriter{tx: tx})
		})
	}
	if err != nil {
		return BatchResult{}, fmt.Errorf("store: unable to apply a batch of %d indicators to feed %d: %w", p.n, b.FeedID, err)
	}
	return res, nil
}

// dbTime is t as both databases keep it: UTC, to the microsecond.
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// dedupe checks the batch and merges repeated (kind, value, source): the last
// report wins, whether it stores or revokes.
func dedupe(b Batch, now int64) (upserts []pendingSighting, revoked []sightKey, err error) {
	type entry struct {
		p       pendingSighting
		revoked bool
	}
	index := make(map[sightKey]int, len(b.Indicators))
	entries := make([]entry, 0, len(b.Indicators))
	tagJSON := map[string]string{}
	for i, ind := range b.Indicators {
		if _, err := ioc.ParseKind(string(ind.Kind)); err != nil {
			return nil, nil, Invalid("indicators", "indicator %d: %v", i, err)
		}
		if ind.Value == "" || len(ind.Value) > ioc.MaxValueLen {
			return nil, nil, Invalid("indicators", "indicator %d: value is empty or longer than %d bytes", i, ioc.MaxValueLen)
		}
		if ind.Score < 0 || ind.Score > 100 {
			return nil, nil, Invalid("indicators", "indicator %d: score %d is not within 0..100", i, ind.Score)
		}
		k := sightKey{valKey{ind.Kind, ind.Value}, ind.Source}
		e := entry{revoked: ind.Revoked}
		if !ind.Revoked {
			expires := now + b.Retention.Microseconds()
			if !ind.ValidUntil.IsZero() {
				expires = micros(ind.ValidUntil)
			} else if b.Retention <= 0 {
				return nil, nil, Invalid("retention", "retention must be positive when an indicator has no expiry of its own")
			}
			if expires <= now {
				continue // expired on arrival: nothing to keep
			}
			tags := normTags(ind.Tags)
			key := strings.Join(tags, "\x00")
			js, ok := tagJSON[key]
			if !ok {
				js = jsonTags(tags)
				tagJSON[key] = js
			}
			e.p = pendingSighting{sightKey: k, score: ind.Score, tags: tags, tagJSON: js, expires: expires}
			if ind.Kind == ioc.Rule {
				// PostgreSQL's text holds neither NUL nor invalid UTF-8: a
				// broken byte must not cost the whole batch.
				e.p.text, e.p.textAt = strings.ToValidUTF8(strings.ReplaceAll(ind.Text, "\x00", ""), "\uFFFD"), i
			}
		} else {
			e.p.sightKey = k
		}
		if j, ok := index[k]; ok {
			entries[j] = e
			continue
		}
		index[k] = len(entries)
		entries = append(entries, e)
	}
	// Sized once: growing a slice of these structs, 20,000 of them a
	// batch, cost more than the rest of the loop (docs/benchmarks.md).
	upserts = make([]pendingSighting, 0, len(entries))
	for _, e := range entries {
		if e.revoked {
			revoked = append(revoked, e.p.sightKey)
		} else {
			upserts = append(upserts, e.p)
		}
	}
	return upserts, revoked, nil
}

// normTags returns tags sorted, without blanks or repeats.
func normTags(tags []string) []string {
	if len(tags) == 1 && tags[0] != "" {
		return tags
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

func jsonTags(tags []string) string {
	if len(tags) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(tags) // []string always encodes
	return string(b)
}
