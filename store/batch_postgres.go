package store

import (
	"context"
	"fmt"

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

type pgWriter struct{ tx pgx.Tx }

func (w *pgWriter) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := w.tx.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// copyIoCs fills the session's staging table of IoCs, emptied at commit.
func (w *pgWriter) copyIoCs(ctx context.Context, aggs []*aggregate) error {
	if _, err := w.tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS tifeeds_iocs_in (
	type TEXT, value TEXT COLLATE "C", score INTEGER, tags JSONB,
	first_seen BIGINT, last_seen BIGINT, expires_at BIGINT) ON COMMIT DELETE ROWS`); err != nil {
		return err
	}
	if _, err := w.tx.Exec(ctx, "TRUNCATE tifeeds_iocs_in"); err != nil {
		return err
	}
	i := 0
	_, err := w.tx.CopyFrom(ctx, pgx.Identifier{"tifeeds_iocs_in"},
		[]string{"type", "value", "score", "tags", "first_seen", "last_seen", "expires_at"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == len(aggs) {
				return nil, nil
			}
			a := aggs[i]
			i++
			return []any{string(a.kind), a.value, a.score, a.tagJSON, a.first, a.last, a.expires}, nil
		}))
	return err
}

func (w *pgWriter) insertNew(ctx context.Context, aggs []*aggregate) error {
	if err := w.copyIoCs(ctx, aggs); err != nil {
		return err
	}
	rows, err := w.tx.Query(ctx, `INSERT INTO iocs (type, value, score, tags, first_seen, last_seen, expires_at, changed_at)
SELECT type, value, score, tags, first_seen, last_seen, expires_at, `+iocStampExpr+` FROM tifeeds_iocs_in ORDER BY type, value
ON CONFLICT (type, value) DO NOTHING RETURNING id, type, value`)
	if err != nil {
		return err
	}
	defer rows.Close()
	byKey := make(map[valKey]*aggregate, len(aggs))
	for _, a := range aggs {
		byKey[a.valKey] = a
	}
	for rows.Next() {
		var k valKey
		var id int64
		if err := rows.Scan(&id, &k.kind, &k.value); err != nil {
			return err
		}
		if a := byKey[k]; a != nil {
			a.id = id
		}
	}
	return rows.Err()
}

func (w *pgWriter) sightings(ctx context.Context, keys map[ioc.Kind][]string) ([]storedSighting, error) {
	// Two plain index lookups rather than one join: the planner, without
	// fresh statistics during a large ingestion, tends to hash-join the
	// whole sightings table.
	byID := map[int64]valKey{}
	var ids []int64
	for kind, values := range keys {
		rows, err := w.tx.Query(ctx, `SELECT id, value FROM iocs WHERE type = $1 AND value = ANY(CAST($2 AS TEXT[]) COLLATE "C")`,
			string(kind), values)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			k := valKey{kind: kind}
			if err := rows.Scan(&id, &k.value); err != nil {
				rows.Close()
				return nil, err
			}
			byID[id] = k
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := w.tx.Query(ctx, `SELECT ioc_id, feed_id, source, score, tags, first_seen, last_seen, expires_at
FROM sightings WHERE ioc_id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]storedSighting, 0, len(ids))
	has := make(map[int64]bool, len(ids))
	for rows.Next() {
		var st storedSighting
		if err := rows.Scan(&st.iocID, &st.feedID, &st.source, &st.score, &st.tags, &st.first, &st.last, &st.expires); err != nil {
			return nil, err
		}
		st.valKey = byID[st.iocID]
		has[st.iocID] = true
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !has[id] {
			out = append(out, storedSighting{valKey: byID[id], iocID: id})
		}
	}
	return out, nil
}

func (w *pgWriter) updateIoCs(ctx context.Context, aggs []*aggregate) error {
	if err := w.copyIoCs(ctx, aggs); err != nil {
		return err
	}
	// An upsert on the unique key probes the index row by row, whatever
	// the statistics say; these rows all exist.
	_, err := w.tx.Exec(ctx, `INSERT INTO iocs (type, value, score, tags, first_seen, last_seen, expires_at, changed_at)
SELECT type, value, score, tags, first_seen, last_seen, expires_at, `+iocStampExpr+` FROM tifeeds_iocs_in ORDER BY type, value
ON CONFLICT (type, value) DO UPDATE SET score = excluded.score, tags = excluded.tags,
first_seen = excluded.first_seen, last_seen = excluded.last_seen, expires_at = excluded.expires_at,
changed_at = excluded.changed_at`)
	return err
}

func (w *pgWriter) upsertSightings(ctx context.Context, feedID int64, now int64, rows []pendingSighting) error {
	var fresh, known []*pendingSighting
	for i := range rows {
		if rows[i].fresh {
			fresh = append(fresh, &rows[i])
		} else {
			known = append(known, &rows[i])
		}
	}
	// Sightings of IoCs this batch created cannot conflict (the write lock
	// is held): they are copied straight into the table, at COPY's speed.
	if len(fresh) > 0 {
		i := 0
		_, err := w.tx.CopyFrom(ctx, pgx.Identifier{"sightings"},
			[]string{"ioc_id", "feed_id", "source", "score", "tags", "first_seen", "last_seen", "expires_at"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if i == len(fresh) {
					return nil, nil
				}
				p := fresh[i]
				i++
				return []any{p.iocID, feedID, p.source, p.score, p.tagJSON, now, now, p.expires}, nil
			}))
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
	i := 0
	_, err := w.tx.CopyFrom(ctx, pgx.Identifier{"tifeeds_sightings_in"},
		[]string{"ioc_id", "source", "score", "tags", "expires_at"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == len(known) {
				return nil, nil
			}
			p := known[i]
			i++
			return []any{p.iocID, p.source, p.score, p.tagJSON, p.expires}, nil
		}))
	if err != nil {
		return err
	}
	_, err = w.tx.Exec(ctx, `INSERT INTO sightings (ioc_id, feed_id, source, score, tags, first_seen, last_seen, expires_at)
SELECT ioc_id, $1, source, score, tags, $2, $2, expires_at FROM tifeeds_sightings_in ORDER BY ioc_id, source
ON CONFLICT (ioc_id, feed_id, source) DO UPDATE SET score = excluded.score, tags = excluded.tags,
last_seen = excluded.last_seen, expires_at = excluded.expires_at`, feedID, now)
	return err
}

func (w *pgWriter) deleteSightings(ctx context.Context, feedID int64, rows []storedSighting) (int, error) {
	n := 0
	for _, st := range rows {
		tag, err := w.tx.Exec(ctx, "DELETE FROM sightings WHERE ioc_id = $1 AND feed_id = $2 AND source = $3", st.iocID, feedID, st.source)
		if err != nil {
			return n, err
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}

func (w *pgWriter) deleteIoCs(ctx context.Context, ids []int64) error {
	if _, err := w.tx.Exec(ctx, "DELETE FROM sightings WHERE ioc_id = ANY($1)", ids); err != nil {
		return err
	}
	_, err := w.tx.Exec(ctx, "DELETE FROM iocs WHERE id = ANY($1)", ids)
	return err
}
