package store

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/tifeeds/tifeeds/ioc"
)

// pgTx runs fn in a transaction on a pgx connection of the pool, for COPY.
func (s *Store) pgTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		return pgx.BeginFunc(ctx, sc.Conn(), func(tx pgx.Tx) error { return fn(ctx, tx) })
	})
}

type pgWriter struct {
	tx pgx.Tx
	// freshStreak is the Store's: whether the last batch found none of its
	// IoCs stored (see insertNew).
	freshStreak *atomic.Bool
}

// stamp reads the last change stamp taken, for takeStamps.
func (w *pgWriter) stamp(ctx context.Context) (int64, error) {
	var stamp int64
	err := w.tx.QueryRow(ctx, "SELECT stamp FROM ioc_stats WHERE id = 1").Scan(&stamp)
	return stamp, err
}

func (w *pgWriter) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := w.tx.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// iocColumns and encodeIoC are what a batch writes of each IoC: the one
// place that lists its per-row columns, for the direct COPY of new IoCs and
// for the staging table of updates.
const (
	iocColumns = "type, value, score, tags, first_seen, last_seen, expires_at, feed_id, source"
	iocFieldsN = 9 // of iocColumns, which encodeIoC writes
)

func encodeIoC(e *copyEncoder, a *aggregate) {
	e.text(string(a.kind))
	e.text(a.value)
	e.int4(int32(a.score))
	e.jsonb(a.tagJSON)
	e.int8(a.first)
	e.int8(a.last)
	e.int8(a.expires)
	if a.feedID != 0 {
		e.int8(a.feedID)
		e.text(a.source)
	} else {
		e.null()
		e.null()
	}
}

// copyIoCs fills the session's staging table of IoCs, emptied at commit.
func (w *pgWriter) copyIoCs(ctx context.Context, aggs []*aggregate) error {
	if _, err := w.tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS tifeeds_iocs_in (
	type TEXT, value TEXT COLLATE "C", score INTEGER, tags JSONB,
	first_seen BIGINT, last_seen BIGINT, expires_at BIGINT, feed_id BIGINT, source TEXT) ON COMMIT DELETE ROWS`); err != nil {
		return err
	}
	if _, err := w.tx.Exec(ctx, "TRUNCATE tifeeds_iocs_in"); err != nil {
		return err
	}
	_, err := copyBinary(ctx, w.tx.Conn().PgConn(), "COPY tifeeds_iocs_in ("+iocColumns+") FROM STDIN (FORMAT binary)",
		len(aggs), func(e *copyEncoder, i int) {
			e.row(iocFieldsN)
			encodeIoC(e, aggs[i])
		})
	return err
}

// insertNew stores the IoCs of aggs that are not stored yet, setting their
// ids. It runs under the IoC write lock (iocWriteLockID), so what it finds
// absent stays absent until it commits: those IoCs are copied straight into
// iocs, with ids reserved from the table's sequence beforehand. An INSERT
// ... ON CONFLICT from a staging table did the same at half the speed
// (speculative insertion per row, the staging copy, RETURNING).
//
// While the batches bring only new IoCs (a first ingestion, a feed of
// fresh indicators), the copy is tried without looking first, in a
// savepoint: a stored IoC makes it fail, and the batch then looks up which
// are stored and copies the others. The first stored IoC found ends the
// streak, so a feed of known IoCs looks first and wastes no copy.
func (w *pgWriter) insertNew(ctx context.Context, aggs []*aggregate) error {
	// COPY takes no expression: the stamps are copied as values. Reserved
	// for every IoC of aggs, whichever attempt below copies them.
	stamp, err := takeStamps(ctx, w.stamp, w.exec, len(aggs))
	if err != nil {
		return err
	}
	if w.freshStreak.Load() {
		err := pgx.BeginFunc(ctx, w.tx, func(sp pgx.Tx) error { return copyNewIoCs(ctx, sp, aggs, stamp) })
		if !isUniqueViolation(err) {
			return err // nil: all were new
		}
		w.freshStreak.Store(false)
	}
	stored, err := w.storedKeys(ctx, aggs)
	if err != nil {
		return err
	}
	w.freshStreak.Store(len(stored) == 0)
	fresh := aggs
	if len(stored) > 0 {
		fresh = make([]*aggregate, 0, len(aggs)-len(stored))
		for _, a := range aggs {
			if !stored[a.valKey] {
				fresh = append(fresh, a)
			}
		}
	}
	return copyNewIoCs(ctx, w.tx, fresh, stamp)
}

// copyNewIoCs copies aggs into iocs with change stamps from stamp on, one
// each, and sets their ids; a stored IoC among them fails it with a unique violation.
func copyNewIoCs(ctx context.Context, tx pgx.Tx, aggs []*aggregate, stamp int64) error {
	if len(aggs) == 0 {
		return nil
	}
	// One range of ids: every writer of iocs holds the IoC write lock, so
	// no other nextval runs between these two. iocs_id_seq is the sequence
	// of the BIGSERIAL iocs.id. Ids follow the order of aggs, (type,
	// value): the primary key grows at its end.
	var last int64
	if err := tx.QueryRow(ctx, "SELECT setval('iocs_id_seq', nextval('iocs_id_seq') + $1 - 1)", len(aggs)).Scan(&last); err != nil {
		return err
	}
	first := last - int64(len(aggs)) + 1
	_, err := copyBinary(ctx, tx.Conn().PgConn(), "COPY iocs (id, "+iocColumns+", changed_at) FROM STDIN (FORMAT binary)",
		len(aggs), func(e *copyEncoder, i int) {
			e.row(1 + iocFieldsN + 1)
			e.int8(first + int64(i))
			encodeIoC(e, aggs[i])
			e.int8(stamp + int64(i))
		})
	if err != nil {
		return err
	}
	// Set only now: a failed attempt leaves no id behind (the batch may be
	// applied again).
	for i, a := range aggs {
		a.id = first + int64(i)
	}
	return nil
}

// storedKeys returns which IoCs of aggs are stored: one index lookup of an
// array of values per kind.
func (w *pgWriter) storedKeys(ctx context.Context, aggs []*aggregate) (map[valKey]bool, error) {
	byKind := map[ioc.Kind][]string{}
	for _, a := range aggs {
		byKind[a.kind] = append(byKind[a.kind], a.value)
	}
	var stored map[valKey]bool
	for kind, values := range byKind {
		rows, err := w.tx.Query(ctx, `SELECT value FROM iocs WHERE type = $1 AND value = ANY(CAST($2 AS TEXT[]) COLLATE "C")`,
			string(kind), values)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			k := valKey{kind: kind}
			if err := rows.Scan(&k.value); err != nil {
				rows.Close()
				return nil, err
			}
			if stored == nil {
				stored = map[valKey]bool{}
			}
			stored[k] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return stored, nil
}

func (w *pgWriter) sightings(ctx context.Context, keys map[ioc.Kind][]string) ([]storedSighting, error) {
	// Two plain index lookups rather than one join: the planner, without
	// fresh statistics during a large ingestion, tends to hash-join the
	// whole sightings table. An IoC's inline sighting comes with it.
	byID := map[int64]storedSighting{} // an IoC's row, without a sighting
	var ids []int64
	var out []storedSighting
	for kind, values := range keys {
		// The tags only of an inline sighting: the others' are not used,
		// and decoding them cost a JSON parse per re-sighted IoC. The
		// IoC's own come as text, for the overview counts, which decode
		// each distinct set once (storedTags).
		rows, err := w.tx.Query(ctx, `SELECT id, value, feed_id, source, score,
	CASE WHEN feed_id IS NOT NULL THEN tags END, first_seen, last_seen, expires_at, tags::text
FROM iocs WHERE type = $1 AND value = ANY(CAST($2 AS TEXT[]) COLLATE "C")`, string(kind), values)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			st := storedSighting{valKey: valKey{kind: kind}}
			var feedID *int64
			var source *string
			if err := rows.Scan(&st.iocID, &st.value, &feedID, &source, &st.score, &st.tags, &st.first, &st.last, &st.expires, &st.iocTags); err != nil {
				rows.Close()
				return nil, err
			}
			st.iocScore, st.iocExpires = st.score, st.expires
			if feedID != nil {
				st.feedID, st.source, st.inline = *feedID, *source, true
				out = append(out, st)
				continue
			}
			byID[st.iocID] = storedSighting{valKey: st.valKey, iocID: st.iocID, iocScore: st.iocScore, iocTags: st.iocTags, iocExpires: st.iocExpires}
			ids = append(ids, st.iocID)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := w.tx.Query(ctx, `SELECT ioc_id, feed_id, source, score, tags, first_seen, last_seen, expires_at
FROM sighting_rows WHERE ioc_id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	has := make(map[int64]bool, len(ids))
	for rows.Next() {
		var st storedSighting
		if err := rows.Scan(&st.iocID, &st.feedID, &st.source, &st.score, &st.tags, &st.first, &st.last, &st.expires); err != nil {
			return nil, err
		}
		ioc := byID[st.iocID]
		st.valKey, st.iocScore, st.iocTags, st.iocExpires = ioc.valKey, ioc.iocScore, ioc.iocTags, ioc.iocExpires
		has[st.iocID] = true
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !has[id] {
			out = append(out, byID[id])
		}
	}
	return out, nil
}

func (w *pgWriter) updateIoCs(ctx context.Context, aggs []*aggregate) error {
	if err := w.copyIoCs(ctx, aggs); err != nil {
		return err
	}
	stamp, err := takeStamps(ctx, w.stamp, w.exec, len(aggs))
	if err != nil {
		return err
	}
	// An upsert on the unique key probes the index row by row, whatever
	// the statistics say; these rows all exist. Each takes its own stamp,
	// in the order of the one sort both the numbering and the rows use.
	_, err = w.tx.Exec(ctx, `INSERT INTO iocs (`+iocColumns+`, changed_at)
SELECT `+iocColumns+`, $1::bigint + row_number() OVER (ORDER BY type, value) - 1 FROM tifeeds_iocs_in ORDER BY type, value
ON CONFLICT (type, value) DO UPDATE SET score = excluded.score, tags = excluded.tags,
first_seen = excluded.first_seen, last_seen = excluded.last_seen, expires_at = excluded.expires_at,
feed_id = excluded.feed_id, source = excluded.source, changed_at = excluded.changed_at`, stamp)
	return err
}

func (w *pgWriter) upsertSightings(ctx context.Context, feedID int64, now int64, rows []pendingSighting) error {
	var fresh, known []*pendingSighting
	for i := range rows {
		if rows[i].inline {
			continue // in its IoC's row
		}
		if rows[i].fresh {
			fresh = append(fresh, &rows[i])
		} else {
			known = append(known, &rows[i])
		}
	}
	// Sightings of IoCs this batch created cannot conflict (the write lock
	// is held): they are copied straight into the table, at COPY's speed.
	if len(fresh) > 0 {
		// In key order the rows append to both indexes of sightings: the
		// batch's new ids are above every stored one, and its rows share
		// a feed and mostly an expiry. In the batch's order each row
		// descended the trees and split pages in the middle: 1.3 s more
		// of server CPU per 1,000,000 rows (docs/benchmarks.md).
		fresh = sightingsInKeyOrder(fresh)
		_, err := copyBinary(ctx, w.tx.Conn().PgConn(),
			"COPY sighting_rows ("+sightingColumns+") FROM STDIN (FORMAT binary)",
			len(fresh), func(e *copyEncoder, i int) {
				p := fresh[i]
				e.row(8)
				e.int8(p.iocID)
				e.int8(feedID)
				e.text(p.source)
				e.int4(int32(p.score))
				e.jsonb(p.tagJSON)
				e.int8(now)
				e.int8(now)
				e.int8(p.expires)
			})
		if err != nil {
			return err
		}
	}
	if len(known) == 0 {
		return nil
	}
	if _, err := w.tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS tifeeds_sightings_in (
	ioc_id BIGINT, source TEXT, score INTEGER, tags JSONB, expires_at BIGINT) ON COMMIT DELETE ROWS`); err != nil {
		return err
	}
	_, err := copyBinary(ctx, w.tx.Conn().PgConn(), "COPY tifeeds_sightings_in (ioc_id, source, score, tags, expires_at) FROM STDIN (FORMAT binary)",
		len(known), func(e *copyEncoder, i int) {
			p := known[i]
			e.row(5)
			e.int8(p.iocID)
			e.text(p.source)
			e.int4(int32(p.score))
			e.jsonb(p.tagJSON)
			e.int8(p.expires)
		})
	if err != nil {
		return err
	}
	_, err = w.tx.Exec(ctx, `INSERT INTO sighting_rows (`+sightingColumns+`)
SELECT ioc_id, $1, source, score, tags, $2, $2, expires_at FROM tifeeds_sightings_in ORDER BY ioc_id, source
ON CONFLICT (ioc_id, feed_id, source) DO UPDATE SET score = excluded.score, tags = excluded.tags,
last_seen = excluded.last_seen, expires_at = excluded.expires_at`, feedID, now)
	return err
}

func (w *pgWriter) insertSightings(ctx context.Context, rows []storedSighting) error {
	_, err := copyBinary(ctx, w.tx.Conn().PgConn(), "COPY sighting_rows ("+sightingColumns+") FROM STDIN (FORMAT binary)",
		len(rows), func(e *copyEncoder, i int) {
			st := &rows[i]
			e.row(8)
			e.int8(st.iocID)
			e.int8(st.feedID)
			e.text(st.source)
			e.int4(int32(st.score))
			e.jsonb(jsonTags(st.tags))
			e.int8(st.first)
			e.int8(st.last)
			e.int8(st.expires)
		})
	return err
}

func (w *pgWriter) deleteSightings(ctx context.Context, feedID int64, rows []storedSighting) (int, error) {
	n := 0
	for _, st := range rows {
		tag, err := w.tx.Exec(ctx, "DELETE FROM sighting_rows WHERE ioc_id = $1 AND feed_id = $2 AND source = $3", st.iocID, feedID, st.source)
		if err != nil {
			return n, err
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}

func (w *pgWriter) deleteIoCs(ctx context.Context, ids []int64) error {
	if _, err := w.tx.Exec(ctx, "DELETE FROM sighting_rows WHERE ioc_id = ANY($1)", ids); err != nil {
		return err
	}
	// PostgreSQL keeps no order keys: its indexes on iocs serve the orders.
	if _, err := w.tx.Exec(ctx, "DELETE FROM iocs WHERE id = ANY($1)", ids); err != nil {
		return err
	}
	for _, stmt := range recomputeZones("zone = ANY($1)") {
		if _, err := w.tx.Exec(ctx, stmt, zonesOf(ids)); err != nil {
			return err
		}
	}
	return nil
}

func (w *pgWriter) ruleTexts(ctx context.Context, feedID int64, ids []int64) (map[int64]ruleText, string, error) {
	var name string
	if err := w.tx.QueryRow(ctx, "SELECT name FROM feeds WHERE id = $1", feedID).Scan(&name); err != nil {
		return nil, "", err
	}
	rows, err := w.tx.Query(ctx, `SELECT t.ioc_id, coalesce(t.feed_id, 0), coalesce(f.name, ''), t.text
FROM ioc_texts t LEFT JOIN feeds f ON f.id = t.feed_id WHERE t.ioc_id = ANY($1)`, ids)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	out := make(map[int64]ruleText, len(ids))
	for rows.Next() {
		var id int64
		var t ruleText
		if err := rows.Scan(&id, &t.owner, &t.ownerName, &t.text); err != nil {
			return nil, "", err
		}
		out[id] = t
	}
	return out, name, rows.Err()
}
