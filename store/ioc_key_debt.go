package store

import (
	"context"
	"database/sql"
	"fmt"
)

// DefaultKeyLagLimit is how many changed IoCs without their order and tag
// keys, and how many new IoCs without a value key, a batch leaves behind at
// most while a KeyIndexer keeps the keys: a keyed page sorts the IoCs
// changed since the keys' stamp, and a search scans the values after the
// value keys, so their lag is what a read costs beyond its keys (about a
// millisecond per 5,000 IoCs sorted). PostgreSQL's; SQLite's is
// sqliteKeyLagLimit.
const DefaultKeyLagLimit = DefaultKeyChunk

// sqliteKeyLagLimit is SQLite's DefaultKeyLagLimit. Its pages in an order
// of its own keys read every IoC changed since them (5-12 ms for 50,000 at
// 10,000,000 IoCs), and at 20,000 its batches paying sooner cost its
// ingest nothing measurable (44,900-53,300 IoCs/s during the curves' reads
// against 38,400-56,100 at 50,000); on PostgreSQL, whose order pages read
// indexes, it halved the ingest (11,400 IoCs/s against 21,400-28,200: its
// indexer busy 40.6 s of a 43.8-s run).
const sqliteKeyLagLimit = 20_000

// maxDebtChunks bounds the chunks one batch pays for: after an upgrade, or
// once an indexer first ticks on a store far behind, a batch pays a few
// chunks and goes on, and the lag falls by that much a batch.
const maxDebtChunks = 4

// payKeyDebt brings the key tables back within KeyLagLimit of the IoCs
// before a batch writes, chunk by chunk (at most maxDebtChunks), while a
// KeyIndexer keeps them. Left to the indexer alone, they fell behind any
// constant ingest: on PostgreSQL a tag and a value key cost a core about
// 19 µs an IoC against the batches' 14 µs on both cores, and after 9,500,000
// IoCs brought in at full speed 3,100,000 lacked their tag keys and
// 7,300,000 their value keys. Pages and searches then read that lag from
// iocs: a rare tag took 2.6 s at 10,000,000 IoCs and a search 2.7 s
// (docs/decisions.md, "Writers pay the keys' debt"). Paid by the writers,
// the keys cost ingestion what they cost, and every read stays within a
// bounded lag at any moment.
//
// A chunk that fails does not fail the batch: the keys only serve reads,
// which stay exact through the lag, and the indexer reports the failure
// on its next tick.
func (s *Store) payKeyDebt(ctx context.Context) error {
	if !s.keysKept.Load() {
		return nil
	}
	limit := int64(s.KeyLagLimit)
	switch {
	case limit > 0:
	case s.Dialect == SQLite:
		limit = sqliteKeyLagLimit
	default:
		limit = DefaultKeyLagLimit
	}
	for range maxDebtChunks {
		changed, unvalued, err := s.keysLag(ctx, limit)
		if err != nil {
			return nil // as a chunk that fails
		}
		switch {
		case changed > limit:
			_, err = s.CatchUpOrderKeys(ctx, DefaultKeyChunk)
		case unvalued > limit:
			_, err = s.CatchUpValueKeys(ctx, DefaultKeyChunk)
		default:
			return nil
		}
		if err != nil {
			return ctx.Err()
		}
	}
	return nil
}

// keysLag says how far the key tables lag, each up to limit+1: how many
// IoCs changed since the order and tag keys' stamp (a range of
// iocs_changed_idx), and how many ids follow the value keys' (PostgreSQL
// skips some: an upper bound). Counted in stamp order, so that PostgreSQL
// walks the range of the index: not knowing the stamp when it plans, it
// scanned iocs from its start for IoCs changed since, which are the
// newest (2.3 s a batch at 10,000,000 IoCs).
//
// The IoCs changed since are the writers' changes since their last mark at
// or below the stamp (changesSince), when there is one: counted, they cost
// every batch 45-154 ms during an ingest at 1,000,000 IoCs on PostgreSQL
// (40,000-60,000 entries, each a heap fetch).
func (s *Store) keysLag(ctx context.Context, limit int64) (changed, unvalued int64, err error) {
	var stamp int64
	var marked sql.NullInt64
	if err := s.reader().QueryRowContext(ctx, `SELECT k.stamp, `+changesSinceMarkSQL("k.stamp")+`,
	(SELECT coalesce(max(id), 0) FROM iocs) - k.value_id
FROM ioc_keys_state k WHERE k.id = 1`).Scan(&stamp, &marked, &unvalued); err != nil {
		return 0, 0, fmt.Errorf("store: unable to read how far the indicator keys lag: %w", err)
	}
	if marked.Valid {
		return min(max(marked.Int64, 0), limit+1), unvalued, nil
	}
	n, err := s.changedSince(ctx, stamp, int(limit+1))
	if err != nil {
		return 0, 0, fmt.Errorf("store: unable to read how far the indicator keys lag: %w", err)
	}
	return int64(n), unvalued, nil
}
