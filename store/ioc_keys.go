package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/tifeeds/tifeeds/store/migrations"
)

// The key tables serve reads as indexes on iocs would, but the writers do
// not keep them: an index costs every batch a B-tree insert per IoC (a
// (score, id) index took SQLite's ingestion from 0.52 to well under 0.5 of
// sqlite3 .import and PostgreSQL's down 15-30 %; each time-ordered one cost
// PostgreSQL 0.7-1.0 s per 1,000,000 new IoCs), while the key indexer adds
// a quiet moment's changes in bulk, in key order. They are:
//
//   - on SQLite, ioc_score_keys, ioc_first_seen_keys, ioc_last_seen_keys
//     and ioc_expires_keys (key, id): the SCORE, FIRST_SEEN, LAST_SEEN and
//     EXPIRATION_DATE orders, and the ranges of minScore and the expiry
//     filters (orderKeyTables); PostgreSQL reads those through indexes on
//     iocs (Store.orderKeys);
//   - ioc_tag_keys (tag, id): the tag filter;
//   - ioc_value_keys (a trigram index of the values: pg_trgm's GIN on
//     PostgreSQL, an FTS5 table on SQLite): the search.
//
// An order key holds while the IoC's column of the order equals it; a
// tag key while its stamp is the IoC's change stamp (tagKeyHolds).
// ioc_keys_state.stamp is how far the tables are complete: every IoC whose
// change stamp (iocs.changed_at) is at most it has a key that holds for
// each of its orders and each of its tags; a change always draws a stamp
// above every stamp handed out before (iocs_changes.go). Readers take the
// IoCs changed since from iocs itself, and skip keys that no longer hold
// (the IoC went, or changed: its column moved, or its tags' stamps), which
// CleanKeys deletes. A change makes only the order keys that moved anew: a
// feed's next poll re-sights its IoCs, which moves their last_seen and
// expires_at, not their score or first_seen (holding while the stamps
// matched, every order key of every re-sighted IoC was made again, about
// 335 µs of SQLite's writer an IoC at 14,000,000: docs/benchmarks.md,
// "Keys that hold while true"). An order key's stamp is its IoC's change
// stamp when it was made, which no reader needs.
// ioc_order_key_rows keeps how many keys each order's table holds, moved
// in the transaction of every insert and delete (moveKeyRows): a count of
// a range of keys less those that may not hold (heldKeysPast).
// The value keys are complete by id instead (ioc_keys_state.value_id,
// CatchUpValueKeys): a value key holds while its IoC is there.

// orderKey is an order whose keys the key indexer keeps: table holds them
// as (key, id, stamp), key being the IoC's column of the order.
type orderKey struct {
	field IoCOrderField
	table string
}

// holds is the condition on a key x of k's table and its IoC (iocs) that
// the key holds: the IoC's column is the key.
func (k orderKey) holds() string { return "iocs." + string(k.field) + " = x.key" }

// tagKeyHolds is the condition on a tag key x and its IoC (iocs) that the
// key holds: its stamp is still the IoC's change stamp, the IoC has not
// changed since the key was made. Unlike the order keys, tag keys keep
// that test, which SQLite answers from iocs_changed_idx without the IoC's
// row: testing the tags themselves read each key's row, and a rare tag's
// count of 10,001 keys took 30-58 ms at 10,000,000 IoCs where the stamps
// took 5-27 (docs/decisions.md, "Keys that hold while true"). So a change
// stamps an IoC's tag keys anew, in place (6.9 s of the shell's 47 for
// 140,000 re-sighted IoCs on SQLite; left as they were, 2.4 s).
const tagKeyHolds = "iocs.changed_at = x.stamp"

// orderKeyCount is how many orders have keys on SQLite.
const orderKeyCount = 4

// orderKeyTables are the orders with keys on SQLite: every integer-valued
// column of iocs that a page is ordered by. Each has a table of its own, so
// that PostgreSQL had statistics of each order's keys while it kept them
// (see migration 20261228000100).
var orderKeyTables = [orderKeyCount]orderKey{
	{IoCOrderScore, "ioc_score_keys"},
	{IoCOrderFirstSeen, "ioc_first_seen_keys"},
	{IoCOrderLastSeen, "ioc_last_seen_keys"},
	{IoCOrderExpiresAt, "ioc_expires_keys"},
}

// orderKeys returns the orders whose keys the key indexer keeps: on
// SQLite those of orderKeyTables, on PostgreSQL none. PostgreSQL reads
// the orders through indexes on iocs (migration 20270112000100): there the
// key tables cost about 20 µs of a core per changed IoC, against an ingest
// that takes both cores, and fell behind for good under constant writes,
// while an index costs its writer a B-tree insert (docs/decisions.md,
// "PostgreSQL: the orders on indexes again").
func (s *Store) orderKeys() []orderKey {
	if s.Dialect == Postgres {
		return nil
	}
	return orderKeyTables[:]
}

// orderKeyOf returns the order keys of field, if it has some.
func (s *Store) orderKeyOf(field IoCOrderField) (orderKey, bool) {
	for _, k := range s.orderKeys() {
		if k.field == field {
			return k, true
		}
	}
	return orderKey{}, false
}

// DefaultKeyChunk is how many changed IoCs one catch-up transaction of
// the key indexer adds, at most (one transaction's IoCs are never split):
// about 0.3 s of SQLite's writer for new IoCs, 0.8 s for re-sighted ones
// (their old order keys go), which the batches wait for.
const DefaultKeyChunk = 50_000

// CatchUpKeys takes one chunk of the key indexer's work: the order and tag
// keys' while they lag, else the value keys'; caught says whether all the
// key tables are complete.
func (s *Store) CatchUpKeys(ctx context.Context, maxRows int) (caught bool, err error) {
	caught, err = s.CatchUpOrderKeys(ctx, maxRows)
	if err != nil || !caught {
		return false, err
	}
	return s.CatchUpValueKeys(ctx, maxRows)
}

// CatchUpOrderKeys adds to the order and tag keys those of the IoCs changed
// since their stamp, up to about maxRows IoCs, in one transaction; caught
// says whether they are complete up to the latest change.
func (s *Store) CatchUpOrderKeys(ctx context.Context, maxRows int) (caught bool, err error) {
	caught, _, err = s.catchUpOrderKeys(ctx, maxRows, time.Now)
	return caught, err
}

// catchUpOrderKeys is CatchUpOrderKeys, and says how long, by clock, its
// transaction held the store (from its first statement to its commit).
func (s *Store) catchUpOrderKeys(ctx context.Context, maxRows int, clock func() time.Time) (caught bool, held time.Duration, err error) {
	latest, err := s.committedStamp(ctx)
	if err != nil {
		return false, 0, fmt.Errorf("store: unable to read the change stamp: %w", err)
	}
	held, err = s.heldKeysTx(ctx, clock, func(ctx context.Context, tx bun.Tx) error {
		caught = false
		var from int64
		if err := tx.QueryRowContext(ctx, "SELECT stamp FROM ioc_keys_state WHERE id = 1").Scan(&from); err != nil {
			return err
		}
		if from >= latest {
			caught = true
			return nil
		}
		// Every IoC changed up to latest is committed, and one changed
		// again since has a stamp above it: it waits for a later chunk.
		to := latest
		// The chunk ends before the stamp of the row past maxRows, unless
		// that is the first stamp: IoCs that share a stamp (written before
		// each row took its own) go in together.
		var first, past sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT min(changed_at) FROM iocs WHERE changed_at > ?),
	(SELECT changed_at FROM iocs WHERE changed_at > ? ORDER BY changed_at LIMIT 1 OFFSET ?)`,
			from, from, maxRows).Scan(&first, &past); err != nil {
			return err
		}
		switch {
		case !past.Valid:
			caught = true
		case past.Int64 > first.Int64:
			to = past.Int64 - 1
		default:
			to = past.Int64
		}
		if s.Dialect == Postgres {
			if _, err := tx.ExecContext(ctx, pinKeyPlans); err != nil {
				return err
			}
		}
		// The chunk's IoCs lose the order keys that no longer hold: each
		// would cost a walk of its order a probe until cleaned. A
		// re-sighting moves last_seen and expires_at: after a feed
		// re-sighted 1,000,000 IoCs, the first LAST_SEEN ASC page walked
		// the million stale keys (1.7 s on PostgreSQL). An IoC above the
		// table's highest id has none: new IoCs cost no probe (0.5 s a
		// chunk on PostgreSQL). The chunk's ids are materialised first,
		// so that they drive the probes: without statistics of a new
		// table, PostgreSQL walked the whole table instead (1 s a chunk).
		// Then each gets the keys it lacks, in key order: mostly appends
		// at the end of each table; a key that still holds is left as it
		// is.
		for _, k := range s.orderKeys() {
			gone, err := tx.ExecContext(ctx, `WITH chunk AS MATERIALIZED (SELECT id FROM iocs
	WHERE changed_at > ? AND changed_at <= ? AND id <= (SELECT max(id) FROM `+k.table+`))
DELETE FROM `+k.table+` AS x WHERE id IN (SELECT id FROM chunk)
AND NOT EXISTS (SELECT 1 FROM iocs WHERE iocs.id = x.id AND `+k.holds()+`)`, from, to)
			if err != nil {
				return err
			}
			made, err := tx.ExecContext(ctx, `INSERT INTO `+k.table+` (key, id, stamp)
SELECT `+string(k.field)+`, id, changed_at FROM iocs WHERE changed_at > ? AND changed_at <= ? ORDER BY 1, 2
ON CONFLICT (key, id) DO NOTHING`,
				from, to)
			if err != nil {
				return err
			}
			if err := moveKeyRows(ctx, tx, k, made, gone); err != nil {
				return err
			}
		}
		// Sorted in the byte order of the key.
		iocTags, tag := tagRows(s.Dialect)
		byKey := "1, 2"
		if s.Dialect == Postgres {
			byKey = tag + ` COLLATE "C", iocs.id`
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ioc_tag_keys (tag, id, stamp)
SELECT `+tag+`, iocs.id, iocs.changed_at FROM `+iocTags+`
WHERE iocs.changed_at > ? AND iocs.changed_at <= ? ORDER BY `+byKey+`
ON CONFLICT (tag, id) DO UPDATE SET stamp = excluded.stamp`, from, to); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE ioc_keys_state SET stamp = ? WHERE id = 1", to); err != nil {
			return err
		}
		// The change marks below the keys' stamp but its last serve no one
		// (changesSince).
		_, err = tx.ExecContext(ctx, `DELETE FROM ioc_change_marks
	WHERE stamp < (SELECT max(stamp) FROM ioc_change_marks WHERE stamp <= ?)`, to)
		return err
	})
	if err != nil {
		return false, held, fmt.Errorf("store: unable to add the keys of changed indicators: %w", err)
	}
	return caught, held, nil
}

// CatchUpValueKeys adds the value keys of the IoCs after ioc_keys_state's
// value_id, up to maxRows of them, in one transaction; caught says whether
// every IoC has its value key.
//
// A value never changes, so only a new IoC needs a key, and new IoCs take
// ids in commit order (under the IoC write lock): the keys are complete up
// to an id, and a re-sighting costs them nothing. They are apart from the
// order keys because they cost as much again (FTS5 on SQLite: 0.4 s for
// 50,000 new IoCs at 10,000,000, the order and tag keys together 0.4 s;
// docs/benchmarks.md, "Growth curve"): under constant writes the order
// keys, which every page reads, come first, and a search reads the values
// of the IoCs after value_id from iocs, a range of its primary key.
func (s *Store) CatchUpValueKeys(ctx context.Context, maxRows int) (caught bool, err error) {
	caught, _, err = s.catchUpValueKeys(ctx, maxRows, time.Now)
	return caught, err
}

// catchUpValueKeys is CatchUpValueKeys, and says how long, by clock, its
// transaction held the store.
func (s *Store) catchUpValueKeys(ctx context.Context, maxRows int, clock func() time.Time) (caught bool, held time.Duration, err error) {
	latest, err := s.committedID(ctx)
	if err != nil {
		return false, 0, fmt.Errorf("store: unable to read the highest indicator id: %w", err)
	}
	held, err = s.heldKeysTx(ctx, clock, func(ctx context.Context, tx bun.Tx) error {
		var from int64
		if err := tx.QueryRowContext(ctx, "SELECT value_id FROM ioc_keys_state WHERE id = 1").Scan(&from); err != nil {
			return err
		}
		// Up to the maxRows-th IoC after from: ids have gaps (deleted IoCs,
		// and PostgreSQL draws one for each row an insert skips).
		to := latest
		var past sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT id FROM iocs WHERE id > ? ORDER BY id LIMIT 1 OFFSET ?",
			from, max(maxRows-1, 0)).Scan(&past); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if past.Valid {
			to = min(to, past.Int64)
		}
		caught = to >= latest
		if to <= from {
			return nil
		}
		// Ids are never reused, so an IoC after value_id has no key, but
		// for those an upgrade found changed since the stamp (migration
		// 20270111000100): ON CONFLICT, or NOT EXISTS on an FTS5 table,
		// which takes no ON CONFLICT (its rowid is the id).
		// PostgreSQL keeps the value's trigram form (migration
		// 20270114000100).
		values := `INSERT INTO ioc_value_keys (id, value)
SELECT id, ` + migrations.ValueKeyForm("value") + ` FROM iocs WHERE id > ? AND id <= ? ON CONFLICT (id) DO NOTHING`
		if s.Dialect == SQLite {
			values = `INSERT INTO ioc_value_keys (rowid, value)
SELECT id, value FROM iocs WHERE id > ? AND id <= ?
AND NOT EXISTS (SELECT 1 FROM ioc_value_keys k WHERE k.rowid = iocs.id)`
		}
		if _, err := tx.ExecContext(ctx, values, from, to); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "UPDATE ioc_keys_state SET value_id = ? WHERE id = 1", to)
		return err
	})
	if err != nil {
		return false, held, fmt.Errorf("store: unable to add the value keys of new indicators: %w", err)
	}
	return caught, held, nil
}

// committedID returns the highest IoC id, read under the IoC write lock:
// every IoC with an id up to it is committed (or gone).
func (s *Store) committedID(ctx context.Context) (int64, error) {
	return s.committed(ctx, "SELECT coalesce(max(id), 0) FROM iocs")
}

// committedStamp returns the last change stamp handed out, read under the
// IoC write lock: every transaction that drew a stamp up to it has
// committed.
func (s *Store) committedStamp(ctx context.Context) (int64, error) {
	return s.committed(ctx, "SELECT stamp FROM ioc_stats WHERE id = 1")
}

// committed reads the one number query selects under the IoC write lock,
// which every writer that draws a change stamp or an IoC id holds.
func (s *Store) committed(ctx context.Context, query string) (int64, error) {
	var n int64
	err := s.writeTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		return tx.QueryRowContext(ctx, query).Scan(&n)
	})
	return n, err
}

// keyIndexerLockID is the PostgreSQL advisory lock the key indexers of
// the instances take turns with; the IoC writers do not wait for it.
const keyIndexerLockID = 0x7466656564730011

// heldKeysTx runs fn in keysTx and says how long, by clock, the
// transaction held the store: from fn's start (the lock taken) to the
// commit, not its wait for the lock.
func (s *Store) heldKeysTx(ctx context.Context, clock func() time.Time, fn func(ctx context.Context, tx bun.Tx) error) (held time.Duration, err error) {
	var began time.Time
	err = s.keysTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		began = clock()
		return fn(ctx, tx)
	})
	if !began.IsZero() {
		held = clock().Sub(began)
	}
	return held, err
}

// keysTx runs fn in a transaction that writes the key tables: on SQLite
// the one write transaction; on PostgreSQL one that holds the key
// indexers' lock, beside the IoC writers.
//
// On SQLite the transaction keeps its temporary storage in files (the OS's
// page cache), not in the connection's memory as the batches do
// (temp_store = MEMORY saves them system time on their statement
// journals). A chunk that makes the keys of IoCs already stored anew
// deletes and inserts keys all over each key table, and its statement
// journals and sorts grew without bound in memory: after 100,000 stored
// IoCs changed at once at 10,000,000, the ingest beside the indexer peaked
// at 1.16-1.35 GB of RSS, against 173 MB with them in files
// (docs/benchmarks.md, "Growth curve to 10 million, PostgreSQL").
func (s *Store) keysTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	if s.Dialect != SQLite {
		return s.lockedTx(ctx, keyIndexerLockID, fn)
	}
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA temp_store = FILE"); err != nil {
		return err
	}
	// Back to memory for the batches, whatever became of the chunk.
	defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA temp_store = MEMORY")
	return conn.RunInTx(ctx, nil, fn)
}

// KeyPositions is where CleanKeys stopped in each key table: the last key
// it looked at (zero: the start).
type KeyPositions struct {
	// Orders are the positions in the order keys' tables, as
	// orderKeyTables lists them.
	Orders  [orderKeyCount]KeyPosition
	Tag     string
	TagID   int64
	ValueID int64
	// Zone is the next expiry zone to recompute.
	Zone int64
}

// KeyPosition is a position in an order's keys.
type KeyPosition struct{ Key, ID int64 }

// keyTables is how many key tables KeyPositions walks: the orders', the
// tags', the values' and the expiry zones.
const keyTables = orderKeyCount + 3

// starts says, for each key table (the orders', the tags', the values',
// the expiry zones), whether p is at its start: where CleanKeys puts a
// table's position once past its end (or the table's empty).
func (p KeyPositions) starts() [keyTables]bool {
	var out [keyTables]bool
	for i, o := range p.Orders {
		out[i] = o == KeyPosition{}
	}
	out[orderKeyCount] = p.Tag == "" && p.TagID == 0
	out[orderKeyCount+1] = p.ValueID == 0
	out[orderKeyCount+2] = p.Zone == 0
	return out
}

// CleanKeys deletes the keys that no longer hold (their IoC went, its
// column moved or, for a tag key, it changed) among the next chunk of each
// key table after at, in one transaction, and returns where to go on: a
// table's start after its end. It also recomputes the next expiry zones
// (a re-sighting leaves the old expiry in its zone's span).
func (s *Store) CleanKeys(ctx context.Context, at KeyPositions, chunk int) (KeyPositions, error) {
	var next KeyPositions
	err := s.keysTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		next, err = s.cleanKeysIn(ctx, tx, at, chunk)
		return err
	})
	if err != nil {
		return KeyPositions{}, fmt.Errorf("store: unable to clean the indicator keys: %w", err)
	}
	return next, nil
}

// cleanKeysIn is CleanKeys in tx.
func (s *Store) cleanKeysIn(ctx context.Context, tx bun.Tx, at KeyPositions, chunk int) (KeyPositions, error) {
	var next KeyPositions
	if s.Dialect == Postgres {
		// Else PostgreSQL hashed all of iocs for each chunk of 50,000
		// keys (0.5 s a table), every quiet second.
		if _, err := tx.ExecContext(ctx, pinKeyPlans); err != nil {
			return next, err
		}
	}
	for i, k := range s.orderKeys() {
		gone, err := cleanKeyChunk(ctx, tx, k.table, "key, id", k.holds(), chunk,
			[]any{at.Orders[i].Key, at.Orders[i].ID}, &next.Orders[i].Key, &next.Orders[i].ID)
		if err != nil {
			return next, err
		}
		if err := moveKeyRows(ctx, tx, k, nil, gone); err != nil {
			return next, err
		}
	}
	if _, err := cleanKeyChunk(ctx, tx, "ioc_tag_keys", "tag, id", tagKeyHolds, chunk,
		[]any{at.Tag, at.TagID}, &next.Tag, &next.TagID); err != nil {
		return next, err
	}
	// A value key holds while its IoC is there (a value never changes).
	if _, err := cleanKeyChunk(ctx, tx, "ioc_value_keys", s.valueKeyID(), "true", chunk, []any{at.ValueID}, &next.ValueID); err != nil {
		return next, err
	}
	// A zone costs a walk of its ids: as many zones as make a chunk.
	var err error
	next.Zone, err = cleanExpiryZones(ctx, tx, at.Zone, max(chunk/int(expiryZone), 1))
	return next, err
}

// cleanerPass is the key cleaner's pass, kept in ioc_key_cleaner: every
// process and instance goes on with one walk where the last chunk
// stopped, whoever took it.
type cleanerPass struct {
	At KeyPositions `json:"at"`
	// Version is the IoCs' version (ioc_stats) when the pass began at the
	// start of every key table.
	Version int64 `json:"version"`
	// Passed are the tables the pass has been through to their end.
	Passed [keyTables]bool `json:"passed"`
	// Resting: the pass went through every table without a change of the
	// IoCs; no key can have gone stale since, until the version moves (a
	// pass cost PostgreSQL some 0.3 s a quiet second, 80 of them at
	// 1,000,000 IoCs).
	Resting bool `json:"resting"`
}

// restsAt says the pass rests at the IoCs' version: it went through every
// table and nothing changed since.
func (p cleanerPass) restsAt(version int64) bool { return p.Resting && p.Version == version }

// readCleanerPass reads the cleaner's pass and the IoCs' version with q.
// A pass it cannot read is a new one: it only says where to look next.
func readCleanerPass(ctx context.Context, q bun.IConn) (pass cleanerPass, version int64, err error) {
	var state string
	if err := q.QueryRowContext(ctx, `SELECT c.state, st.version FROM ioc_key_cleaner c, ioc_stats st
WHERE c.id = 1 AND st.id = 1`).Scan(&state, &version); err != nil {
		return cleanerPass{}, 0, err
	}
	if json.Unmarshal([]byte(state), &pass) != nil {
		pass = cleanerPass{}
	}
	return pass, version, nil
}

// cleanPieces is how many pieces the cleaner cuts a quiet tick's chunk
// into, so that it stops within a piece of the IoCs changing: a chunk of
// 50,000 keys of each table takes 0.2-0.5 s on PostgreSQL at 10,000,000
// IoCs, all of which a batch that had just begun would have had beside it.
const cleanPieces = 5

// cleanPiece is how many keys of each table a piece of a chunk is.
func cleanPiece(chunk int) int { return max(chunk/cleanPieces, 1) }

// cleanWhileQuiet takes the cleaner's work of a quiet tick, a chunk of
// each key table, in pieces, while the IoCs stay as they were at version
// and no batch or sweep of this process is under way (another instance's
// shows once it commits).
func (s *Store) cleanWhileQuiet(ctx context.Context, chunk int, version int64) error {
	piece := cleanPiece(chunk)
	for range min(cleanPieces, chunk/piece) {
		if s.writes.Load() > 0 {
			return nil
		}
		now, err := s.readNumber(ctx, "SELECT version FROM ioc_stats WHERE id = 1", "the indicators' version")
		if err != nil || now != version {
			return err
		}
		if resting, err := s.cleanNextKeys(ctx, piece); err != nil || resting {
			return err
		}
	}
	return nil
}

// cleanNextKeys takes the cleaner's next chunk (CleanKeys) from where its
// pass stopped, unless the pass rests (which it says), and keeps where it
// stopped.
func (s *Store) cleanNextKeys(ctx context.Context, chunk int) (resting bool, err error) {
	// A resting pass is read without the writer (SQLite) or the indexer's
	// lock (PostgreSQL): it is what a quiet second usually finds.
	pass, version, err := readCleanerPass(ctx, s.reader())
	if err != nil {
		return false, fmt.Errorf("store: unable to read the key cleaner's pass: %w", err)
	}
	if pass.restsAt(version) {
		return true, nil
	}
	err = s.keysTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		pass, version, err := readCleanerPass(ctx, tx)
		if err != nil || pass.restsAt(version) {
			return err
		}
		pass.Resting = false
		if pass.Passed == ([keyTables]bool{}) && pass.At == (KeyPositions{}) {
			pass.Version = version
		}
		if pass.At, err = s.cleanKeysIn(ctx, tx, pass.At, chunk); err != nil {
			return err
		}
		done := true
		for i, start := range pass.At.starts() {
			pass.Passed[i] = pass.Passed[i] || start // past the table's end
			done = done && pass.Passed[i]
		}
		if done {
			pass = cleanerPass{Version: pass.Version, Resting: version == pass.Version}
		}
		state, err := json.Marshal(pass)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE ioc_key_cleaner SET state = ? WHERE id = 1", string(state))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: unable to clean the indicator keys: %w", err)
	}
	return false, nil
}

// cleanKeyChunk deletes the keys of table that no longer hold (holds, a
// condition on the key x and its IoC iocs, fails) among the chunk of keys
// (columns key, its primary key, whose last is the IoC's id) after the key
// after, and scans the chunk's last key into last: left as it was past the
// table's end. It returns the DELETE's result (nil when the chunk was
// empty).
func cleanKeyChunk(ctx context.Context, tx bun.Tx, table, key, holds string, chunk int, after []any, last ...any) (sql.Result, error) {
	marks := placeholders(len(after))
	desc := strings.ReplaceAll(key, ",", " DESC,") + " DESC"
	id := strings.TrimSpace(key[strings.LastIndexByte(key, ',')+1:])
	err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT %[2]s FROM (SELECT %[2]s FROM %[1]s
WHERE (%[2]s) > (%[3]s) ORDER BY %[2]s LIMIT ?) c ORDER BY %[4]s LIMIT 1`, table, key, marks, desc),
		append(slices.Clone(after), chunk)...).Scan(last...)
	if more, err := found(err); err != nil || !more {
		return nil, err
	}
	inChunk := fmt.Sprintf("(%[1]s) > (%[2]s) AND (%[1]s) <= (%[2]s)", key, marks)
	args := append(slices.Clone(after), last...)
	if len(after) == 2 && tx.Dialect().Name() == dialect.PG {
		// PostgreSQL (15) ends a scan of the primary key at a row
		// comparison's upper bound by its first column only: the range
		// read every key of the chunk's last tag after it (0.6-0.8 s a
		// chunk of 50,000 at 10,000,000 IoCs, as long for a chunk already
		// clean, and the longer the further the pass had to go). A chunk
		// within one tag is a range of ids (50 ms); one across tags, its
		// keys read as its last was, up to the LIMIT (250 ms).
		first := strings.TrimSpace(key[:strings.IndexByte(key, ',')])
		if reflect.ValueOf(last[0]).Elem().Interface() == after[0] {
			inChunk = fmt.Sprintf("%[1]s = ? AND %[2]s > ? AND %[2]s <= ?", first, id)
			args = []any{after[0], after[1], last[1]}
		} else {
			inChunk = fmt.Sprintf("(%[2]s) IN (SELECT %[2]s FROM %[1]s WHERE %[3]s ORDER BY %[2]s LIMIT ?)", table, key, inChunk)
			args = append(args, chunk)
		}
	}
	return tx.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %[1]s AS x WHERE %[2]s
AND NOT EXISTS (SELECT 1 FROM iocs WHERE iocs.id = x.%[4]s AND %[3]s)`, table, inChunk, holds, id), args...)
}

// moveKeyRows moves the kept count of k's keys (ioc_order_key_rows) by
// the rows that made inserted and gone deleted (either nil: none), in
// their transaction.
func moveKeyRows(ctx context.Context, tx bun.Tx, k orderKey, made, gone sql.Result) error {
	added, err := rowsAffected(made)
	if err != nil {
		return err
	}
	deleted, err := rowsAffected(gone)
	if err != nil || added == deleted {
		return err
	}
	_, err = tx.ExecContext(ctx, "UPDATE ioc_order_key_rows SET rows = rows + ? WHERE name = ?", added-deleted, k.table)
	return err
}

// rowsAffected is res's RowsAffected, 0 for no result.
func rowsAffected(res sql.Result) (int64, error) {
	if res == nil {
		return 0, nil
	}
	return res.RowsAffected()
}

// tagRows returns, in dialect d, a FROM clause that joins each IoC (iocs) to its tags, a
// row a tag, and the tag's column. Tags are a JSON array of strings, or
// NULL, or a JSON null (what bun writes for a nil slice), which has none:
// SQLite's json_each yields a row of NULL for it, PostgreSQL's
// jsonb_array_elements_text fails on it.
func tagRows(d Dialect) (from, tag string) {
	if d == Postgres {
		return `iocs CROSS JOIN jsonb_array_elements_text(CASE jsonb_typeof(iocs.tags) WHEN 'array' THEN iocs.tags END) t`, "t"
	}
	return `iocs JOIN json_each(iocs.tags) j ON j.type = 'text'`, "j.value"
}

// valueKeyID is the column of ioc_value_keys that holds the IoC's id: on
// SQLite an FTS5 table's rowid.
func (s *Store) valueKeyID() string {
	if s.Dialect == SQLite {
		return "rowid"
	}
	return "id"
}

// found tells a row from none in a QueryRow's err.
func found(err error) (bool, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// dropGoneKeys deletes, in the transaction that deleted IoCs, the keys
// of each of orders of those of ids that are gone (the others keep theirs),
// and narrows their expiry zones (narrowExpiryZones).
// Left to the cleaner, they cost every walk of their order a probe each until it
// passed: after the sweeper expired 1,000,000 IoCs at 3,000,000, the first
// EXPIRATION_DATE ASC page walked all their keys (0.7 s on SQLite) and an
// expiresBefore page counted them (2.5 s), and the cleaner takes a chunk a
// quiet second (docs/benchmarks.md, "Growth curve"). Each table's index on
// id finds them. Tag and value keys are left to the cleaner: no index
// finds them by id, and a gone IoC's tag or value key costs a probe only
// when its tag or text is asked for.
func dropGoneKeys(ctx context.Context, tx bun.Tx, orders []orderKey, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := narrowExpiryZones(ctx, tx, ids); err != nil {
		return err
	}
	for _, k := range orders {
		gone, err := tx.ExecContext(ctx, `DELETE FROM `+k.table+` WHERE id IN (?)
AND NOT EXISTS (SELECT 1 FROM iocs WHERE iocs.id = `+k.table+`.id)`, bun.In(ids))
		if err == nil {
			err = moveKeyRows(ctx, tx, k, nil, gone)
		}
		if err != nil {
			return fmt.Errorf("store: unable to delete the keys of deleted indicators: %w", err)
		}
	}
	return nil
}

// goneIoC is an IoC a deleter deleted, with its tags as stored (JSON).
type goneIoC struct {
	ID   int64  `bun:"id"`
	Tags string `bun:"tags"`
}

// dropGoneTagKeys deletes the tag keys of the IoCs gone, which a deleter
// returned: keys of IoCs that are no more, which no page may skip as
// holding no longer. A deleter that leaves them, leaves them to the
// cleaner's pass, and a keyed walk meets them all before the live keys
// past them: 430 ms a tag's page newest first after a sweep of the
// 2,500,000 newest IoCs at 10,000,000 on SQLite, until the cleaner passed.
// The sweeper drops them as it drops the order keys (dropGoneKeys).
func dropGoneTagKeys(ctx context.Context, tx bun.Tx, d Dialect, gone []goneIoC) error {
	cache := map[string]tagSet{}
	byTag := map[string][]int64{}
	for _, g := range gone {
		ts, err := storedTags(cache, g.Tags)
		if err != nil {
			return err
		}
		for _, t := range ts.tags {
			byTag[t] = append(byTag[t], g.ID)
		}
	}
	if d == Postgres && len(byTag) > 0 {
		var pairs [][2]any
		for tag, ids := range byTag {
			for _, id := range ids {
				pairs = append(pairs, [2]any{tag, id})
			}
		}
		list, err := json.Marshal(pairs)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM ioc_tag_keys k USING jsonb_array_elements(?::jsonb) p
WHERE k.tag = p->>0 AND k.id = (p->>1)::bigint`, string(list)); err != nil {
			return fmt.Errorf("store: unable to delete the tag keys of deleted indicators: %w", err)
		}
		return nil
	}
	// SQLite bounds a row value's IN by its first column only: the pairs
	// in one statement read every key of each of their tags (1.6 s for
	// 5,000 pairs of a tag on 10,000,000 IoCs). A tag at a time, the ids
	// probe the primary key (7 ms).
	for _, tag := range slices.Sorted(maps.Keys(byTag)) {
		ids, err := json.Marshal(byTag[tag])
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM ioc_tag_keys WHERE tag = ? AND id IN (SELECT value FROM json_each(?))`,
			tag, string(ids)); err != nil {
			return fmt.Errorf("store: unable to delete the tag keys of deleted indicators: %w", err)
		}
	}
	return nil
}

// iocStamp reads the last change stamp handed out (ioc_stats, one row).
func (s *Store) iocStamp(ctx context.Context) (int64, error) {
	return s.readNumber(ctx, "SELECT stamp FROM ioc_stats WHERE id = 1", "the change stamp")
}

// readNumber reads the one number query selects, on the read pool; what
// names it in the error.
func (s *Store) readNumber(ctx context.Context, query, what string) (int64, error) {
	var n int64
	if err := s.reader().QueryRowContext(ctx, query).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: unable to read %s: %w", what, err)
	}
	return n, nil
}
