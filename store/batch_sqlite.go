package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
)

// sqliteLookupChunk is the most values per IN list of a lookup, well under
// SQLite's limit of 32766 bound variables.
const sqliteLookupChunk = 4000

// sqliteWriter writes a batch with multi-row INSERTs of sqliteChunkRows
// rows, one prepared statement per table reused for every full chunk.
type sqliteWriter struct {
	tx bun.Tx
	// firstSeen is iocs.first_seen of the stored IoCs sightings read, by
	// id: updateIoCs leaves the column alone where it did not move.
	firstSeen map[int64]int64
}

func (w *sqliteWriter) exec(ctx context.Context, query string, args ...any) (int64, error) {
	r, err := w.tx.Tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// insertNew inserts the IoCs of aggs not stored yet (insertRows) and
// widens their zones' values to hold them.
func (w *sqliteWriter) insertNew(ctx context.Context, aggs []*aggregate) error {
	if err := w.insertRows(ctx, aggs); err != nil {
		return err
	}
	return widenZoneValues(ctx, w.exec, aggs)
}

// insertRows inserts the IoCs with multi-row INSERTs, which return no ids.
// iocs.id is AUTOINCREMENT and this transaction is the only writer: every
// row inserted gets an id above any the table had, in the order of the
// rows. So when every row went in and the largest id moved by their number,
// their ids are the next ones in order; otherwise (some were stored
// already) the ids above the old largest are read back, and those that
// were stored keep id 0.
func (w *sqliteWriter) insertRows(ctx context.Context, aggs []*aggregate) error {
	var before int64
	if err := w.tx.Tx.QueryRowContext(ctx, `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'iocs'), 0),
	coalesce((SELECT max(id) FROM iocs), 0))`).Scan(&before); err != nil {
		return err
	}
	ins := rowInsert{n: len(aggs)}
	ins.bind("type", func(i int) any { return string(aggs[i].kind) })
	ins.bind("value", func(i int) any { return aggs[i].value })
	ins.bind("score", func(i int) any { return aggs[i].score })
	ins.text("tags", func(i int) string { return aggs[i].tagJSON })
	ins.integer("first_seen", func(i int) int64 { return aggs[i].first })
	ins.integer("last_seen", func(i int) int64 { return aggs[i].last })
	ins.integer("expires_at", func(i int) int64 { return aggs[i].expires })
	ins.nullInteger("feed_id", func(i int) (int64, bool) { return aggs[i].feedID, aggs[i].feedID != 0 })
	ins.nullText("source", func(i int) (string, bool) { return aggs[i].source, aggs[i].feedID != 0 })
	stamp, err := takeStamps(ctx, w.stamp, w.exec, len(aggs))
	if err != nil {
		return err
	}
	ins.integer("changed_at", func(i int) int64 { return stamp + int64(i) })
	var inserted int64
	err = ins.exec(ctx, w.tx.Tx, "INSERT INTO iocs ", " ON CONFLICT (type, value) DO NOTHING", func(r sql.Result) error {
		n, err := r.RowsAffected()
		inserted += n
		return err
	})
	if err != nil || inserted == 0 {
		return err
	}
	var after int64
	if err := w.tx.Tx.QueryRowContext(ctx, "SELECT max(id) FROM iocs").Scan(&after); err != nil {
		return err
	}
	if inserted == int64(len(aggs)) && after == before+inserted {
		for i, a := range aggs {
			a.id = before + 1 + int64(i)
		}
		return nil
	}
	byKey := make(map[valKey]*aggregate, len(aggs))
	for _, a := range aggs {
		byKey[a.valKey] = a
	}
	rows, err := w.tx.Tx.QueryContext(ctx, "SELECT id, type, value FROM iocs WHERE id > ?", before)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var k valKey
		if err := rows.Scan(&id, &k.kind, &k.value); err != nil {
			return err
		}
		if a := byKey[k]; a != nil {
			a.id = id
		}
	}
	return rows.Err()
}

// sqliteChunkRows is how many rows one INSERT of a batch writes. Per
// statement, SQLite opens its cursors and database/sql and cgo convert and
// pass the values: a row per statement spent as much there as on the row
// (docs/benchmarks.md). 256 rows of at most 8 bound values stay well under
// SQLite's limit of 32,766 variables.
const sqliteChunkRows = 256

// rowInsert builds the multi-row INSERTs of a batch. A column whose value
// is the same in every row (the feed, the batch's time, often the tags and
// expiry) is written into the statement as a literal instead of being bound
// on every row: each bound value costs a cgo call and a database/sql
// conversion (docs/benchmarks.md).
type rowInsert struct {
	n     int // rows
	cols  []string
	exprs []string
	vary  []func(i int) any
}

// bind adds a column bound on every row.
func (r *rowInsert) bind(col string, v func(i int) any) {
	r.cols = append(r.cols, col)
	r.exprs = append(r.exprs, "?")
	r.vary = append(r.vary, v)
}

// text adds a text column: a literal when every row has the same value,
// bound otherwise.
func (r *rowInsert) text(col string, v func(i int) string) {
	if !r.sameText(col, func(i int) (string, bool) { return v(i), true }) {
		r.bind(col, func(i int) any { return v(i) })
	}
}

// integer adds an integer column: a literal when every row has the same
// value, bound otherwise.
func (r *rowInsert) integer(col string, v func(i int) int64) {
	if !r.sameInteger(col, func(i int) (int64, bool) { return v(i), true }) {
		r.bind(col, func(i int) any { return v(i) })
	}
}

// nullText is text for a column whose rows may be NULL (ok false).
func (r *rowInsert) nullText(col string, v func(i int) (string, bool)) {
	if !r.sameText(col, v) {
		bindNullable(r, col, v)
	}
}

// nullInteger is integer for a column whose rows may be NULL (ok false).
func (r *rowInsert) nullInteger(col string, v func(i int) (int64, bool)) {
	if !r.sameInteger(col, v) {
		bindNullable(r, col, v)
	}
}

// sameText adds col as a literal when every row has the same text (or is
// NULL), and says whether it did.
func (r *rowInsert) sameText(col string, v func(i int) (string, bool)) bool {
	// The driver hands SQL text to SQLite as a C string: a NUL would cut
	// the statement short, so such a value is always bound.
	x, ok, same := sameValue(r.n, v)
	if !same || strings.ContainsRune(x, 0) {
		return false
	}
	r.literal(col, sqlLiteral(x, ok, sqliteQuote))
	return true
}

// sameInteger adds col as a literal when every row has the same integer
// (or is NULL), and says whether it did.
func (r *rowInsert) sameInteger(col string, v func(i int) (int64, bool)) bool {
	x, ok, same := sameValue(r.n, v)
	if same {
		r.literal(col, sqlLiteral(x, ok, func(x int64) string { return strconv.FormatInt(x, 10) }))
	}
	return same
}

// sameValue says whether every one of n rows has the same value (or every
// one is NULL: ok false), and which.
func sameValue[T comparable](n int, v func(i int) (T, bool)) (x T, ok, same bool) {
	if n == 0 {
		return x, false, false
	}
	x, ok = v(0)
	for i := 1; i < n; i++ {
		if y, yok := v(i); yok != ok || ok && y != x {
			return x, ok, false
		}
	}
	return x, ok, true
}

// sqlLiteral is x written by lit, or NULL when not ok.
func sqlLiteral[T any](x T, ok bool, lit func(T) string) string {
	if !ok {
		return "NULL"
	}
	return lit(x)
}

// bindNullable adds a column bound on every row, NULL where ok is false.
func bindNullable[T any](r *rowInsert, col string, v func(i int) (T, bool)) {
	r.bind(col, func(i int) any {
		if x, ok := v(i); ok {
			return x
		}
		return nil
	})
}

// literal adds a column whose value is the SQL literal lit in every row.
func (r *rowInsert) literal(col, lit string) {
	r.cols = append(r.cols, col)
	r.exprs = append(r.exprs, lit)
}

// sql is the column list and VALUES of rows rows.
func (r *rowInsert) sql(rows int) string {
	row := "(" + strings.Join(r.exprs, ",") + ")"
	var b strings.Builder
	b.Grow(len(r.cols)*12 + rows*(len(row)+1) + 16)
	b.WriteString("(" + strings.Join(r.cols, ", ") + ") VALUES ")
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	return b.String()
}

// exec runs head + VALUES + tail over every row, sqliteChunkRows rows a
// statement, and calls done with each statement's result. Statements run
// under a context without cancellation: mattn/go-sqlite3 starts a goroutine
// per statement run under a cancellable context, to interrupt it
// (docs/benchmarks.md). ctx is checked between statements instead, and the
// transaction itself still ends when ctx does.
func (r *rowInsert) exec(ctx context.Context, tx *sql.Tx, head, tail string, done func(sql.Result) error) error {
	stmtCtx := context.WithoutCancel(ctx)
	var full *sql.Stmt
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	args := make([]any, 0, len(r.vary)*min(r.n, sqliteChunkRows))
	for first := 0; first < r.n; first += sqliteChunkRows {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows := min(sqliteChunkRows, r.n-first)
		args = args[:0]
		for i := first; i < first+rows; i++ {
			for _, v := range r.vary {
				args = append(args, v(i))
			}
		}
		var res sql.Result
		var err error
		if rows == sqliteChunkRows {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, head+r.sql(rows)+tail); err != nil {
					return err
				}
			}
			res, err = full.ExecContext(stmtCtx, args...)
		} else {
			res, err = tx.ExecContext(stmtCtx, head+r.sql(rows)+tail, args...)
		}
		if err != nil {
			return err
		}
		if done != nil {
			if err := done(res); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowCheckEvery is how many rows a row-by-row loop runs between two looks
// at ctx.
const rowCheckEvery = 256

// sqliteQuote returns s as an SQLite string literal.
func sqliteQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func (w *sqliteWriter) sightings(ctx context.Context, keys map[ioc.Kind][]string) ([]storedSighting, error) {
	var out []storedSighting
	w.firstSeen = map[int64]int64{}
	for kind, values := range keys {
		for chunk := range slices.Chunk(values, sqliteLookupChunk) {
			// An IoC with an inline sighting has no rows: it is the one
			// row of the LEFT JOIN, its own columns the sighting's.
			q := `SELECT i.id, i.value, i.first_seen, coalesce(i.feed_id, s.feed_id), coalesce(i.source, s.source),
	CASE WHEN i.feed_id IS NULL THEN s.score ELSE i.score END, CASE WHEN i.feed_id IS NULL THEN s.tags ELSE i.tags END,
	CASE WHEN i.feed_id IS NULL THEN s.first_seen ELSE i.first_seen END, CASE WHEN i.feed_id IS NULL THEN s.last_seen ELSE i.last_seen END,
	CASE WHEN i.feed_id IS NULL THEN s.expires_at ELSE i.expires_at END, i.feed_id IS NOT NULL, i.score, i.tags, i.expires_at
FROM iocs i LEFT JOIN sighting_rows s ON s.ioc_id = i.id WHERE i.type = ? AND i.value IN (` + placeholders(len(chunk)) + `)`
			args := make([]any, 0, len(chunk)+1)
			args = append(args, string(kind))
			for _, v := range chunk {
				args = append(args, v)
			}
			rows, err := w.tx.Tx.QueryContext(ctx, q, args...)
			if err != nil {
				return nil, err
			}
			for rows.Next() {
				st := storedSighting{valKey: valKey{kind: kind}}
				var (
					iocFirst            int64
					feedID, score       sql.NullInt64
					source, tags        sql.NullString
					first, last, expire sql.NullInt64
				)
				if err := rows.Scan(&st.iocID, &st.value, &iocFirst, &feedID, &source, &score, &tags, &first, &last, &expire, &st.inline, &st.iocScore, &st.iocTags, &st.iocExpires); err != nil {
					rows.Close()
					return nil, err
				}
				w.firstSeen[st.iocID] = iocFirst
				if feedID.Valid {
					st.feedID, st.source, st.score = feedID.Int64, source.String, int(score.Int64)
					st.first, st.last, st.expires = first.Int64, last.Int64, expire.Int64
					if err := json.Unmarshal([]byte(tags.String), &st.tags); err != nil && tags.Valid {
						rows.Close()
						return nil, fmt.Errorf("sighting tags: %w", err)
					}
				}
				out = append(out, st)
			}
			if err := rows.Close(); err != nil {
				return nil, err
			}
			if err := rows.Err(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (w *sqliteWriter) updateIoCs(ctx context.Context, aggs []*aggregate) error {
	stamp, err := takeStamps(ctx, w.stamp, w.exec, len(aggs))
	if err != nil {
		return err
	}
	// SQLite rewrites the entry of every index on a column the SET names,
	// even to the same value: a re-sighting, which keeps its IoC's
	// first_seen, is updated without naming it (docs/benchmarks.md).
	const set = `UPDATE iocs SET score = ?, tags = ?, last_seen = ?, expires_at = ?, feed_id = ?, source = ?, changed_at = `
	moved, err := w.tx.Tx.PrepareContext(ctx, set+`?, first_seen = ? WHERE id = ?`)
	if err != nil {
		return err
	}
	defer moved.Close()
	kept, err := w.tx.Tx.PrepareContext(ctx, set+`? WHERE id = ?`)
	if err != nil {
		return err
	}
	defer kept.Close()
	rowCtx := context.WithoutCancel(ctx) // see rowInsert.exec
	for i, a := range aggs {
		if i%rowCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var feedID any // NULL: no inline sighting
		if a.feedID != 0 {
			feedID = a.feedID
		}
		source := inlineSource(a)
		if first, ok := w.firstSeen[a.id]; ok && first == a.first {
			_, err = kept.ExecContext(rowCtx, a.score, a.tagJSON, a.last, a.expires, feedID, source, stamp+int64(i), a.id)
		} else {
			_, err = moved.ExecContext(rowCtx, a.score, a.tagJSON, a.last, a.expires, feedID, source, stamp+int64(i), a.first, a.id)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *sqliteWriter) insertSightings(ctx context.Context, rows []storedSighting) error {
	ins := rowInsert{n: len(rows)}
	ins.bind("ioc_id", func(i int) any { return rows[i].iocID })
	ins.bind("feed_id", func(i int) any { return rows[i].feedID })
	ins.bind("source", func(i int) any { return rows[i].source })
	ins.bind("score", func(i int) any { return rows[i].score })
	ins.bind("tags", func(i int) any { return jsonTags(rows[i].tags) })
	ins.bind("first_seen", func(i int) any { return rows[i].first })
	ins.bind("last_seen", func(i int) any { return rows[i].last })
	ins.bind("expires_at", func(i int) any { return rows[i].expires })
	return ins.exec(ctx, w.tx.Tx, "INSERT INTO sighting_rows ", "", nil)
}

func (w *sqliteWriter) upsertSightings(ctx context.Context, feedID int64, now int64, pending []pendingSighting) error {
	// In key order each row goes after the one before in the table and
	// in sightings_feed_idx (a batch's sightings share their expiry),
	// instead of anywhere in the batch's range of ids (docs/benchmarks.md).
	rows := make([]*pendingSighting, 0, len(pending))
	for i := range pending {
		if !pending[i].inline { // else in its IoC's row
			rows = append(rows, &pending[i])
		}
	}
	if len(rows) == 0 {
		return nil
	}
	rows = sightingsInKeyOrder(rows)
	ins := rowInsert{n: len(rows)}
	ins.bind("ioc_id", func(i int) any { return rows[i].iocID })
	ins.literal("feed_id", strconv.FormatInt(feedID, 10))
	ins.bind("source", func(i int) any { return rows[i].source })
	ins.bind("score", func(i int) any { return rows[i].score })
	ins.text("tags", func(i int) string { return rows[i].tagJSON })
	ins.literal("first_seen", strconv.FormatInt(now, 10))
	ins.literal("last_seen", strconv.FormatInt(now, 10))
	ins.integer("expires_at", func(i int) int64 { return rows[i].expires })
	return ins.exec(ctx, w.tx.Tx, "INSERT INTO sighting_rows ", ` ON CONFLICT (ioc_id, feed_id, source) DO UPDATE SET
score = excluded.score, tags = excluded.tags, last_seen = excluded.last_seen, expires_at = excluded.expires_at`, nil)
}

func (w *sqliteWriter) deleteSightings(ctx context.Context, feedID int64, rows []storedSighting) (int, error) {
	n := 0
	rowCtx := context.WithoutCancel(ctx) // see rowInsert.exec
	for i, st := range rows {
		if i%rowCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		r, err := w.tx.Tx.ExecContext(rowCtx, "DELETE FROM sighting_rows WHERE ioc_id = ? AND feed_id = ? AND source = ?", st.iocID, feedID, st.source)
		if err != nil {
			return n, err
		}
		c, _ := r.RowsAffected()
		n += int(c)
	}
	return n, nil
}

func (w *sqliteWriter) deleteIoCs(ctx context.Context, ids []int64) error {
	if _, err := w.tx.ExecContext(ctx, "DELETE FROM sighting_rows WHERE ioc_id IN (?)", bun.In(ids)); err != nil {
		return err
	}
	if _, err := w.tx.ExecContext(ctx, "DELETE FROM iocs WHERE id IN (?)", bun.In(ids)); err != nil {
		return err
	}
	return dropGoneKeys(ctx, w.tx, orderKeyTables[:], ids)
}

// inlineSource is the source of a's inline sighting, or NULL.
func inlineSource(a *aggregate) any {
	if a.feedID == 0 {
		return nil
	}
	return a.source
}

// stamp reads the last change stamp taken, for takeStamps. The stamps are
// bound as values: read within the statements, SQLite would read it again
// for every row of a multi-row INSERT and every UPDATE.
func (w *sqliteWriter) stamp(ctx context.Context) (int64, error) {
	var stamp int64
	err := w.tx.Tx.QueryRowContext(ctx, "SELECT stamp FROM ioc_stats WHERE id = 1").Scan(&stamp)
	return stamp, err
}

// placeholders returns n "?" separated by commas.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func (w *sqliteWriter) ruleTexts(ctx context.Context, feedID int64, ids []int64) (map[int64]ruleText, string, error) {
	var name string
	if err := w.tx.Tx.QueryRowContext(ctx, "SELECT name FROM feeds WHERE id = ?", feedID).Scan(&name); err != nil {
		return nil, "", err
	}
	out := make(map[int64]ruleText, len(ids))
	for chunk := range slices.Chunk(ids, sqliteLookupChunk) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := w.tx.Tx.QueryContext(ctx, `SELECT t.ioc_id, coalesce(t.feed_id, 0), coalesce(f.name, ''), t.text
FROM ioc_texts t LEFT JOIN feeds f ON f.id = t.feed_id WHERE t.ioc_id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, "", err
		}
		for rows.Next() {
			var id int64
			var t ruleText
			if err := rows.Scan(&id, &t.owner, &t.ownerName, &t.text); err != nil {
				rows.Close()
				return nil, "", err
			}
			out[id] = t
		}
		if err := rows.Close(); err != nil {
			return nil, "", err
		}
		if err := rows.Err(); err != nil {
			return nil, "", err
		}
	}
	return out, name, nil
}
