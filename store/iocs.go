package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
)

// IoC is one indicator, unique by (type, normalised value). Score, tags and
// expiry summarise its live sightings.
type IoC struct {
	bun.BaseModel `bun:"table:iocs,alias:iocs"`

	ID        int64     `bun:"id,pk,autoincrement"`
	Type      ioc.Kind  `bun:"type,notnull"`
	Value     string    `bun:"value,notnull"`
	Score     int       `bun:"score,notnull"`
	Tags      []string  `bun:"tags,type:json"`
	FirstSeen time.Time `bun:"-"`
	LastSeen  time.Time `bun:"-"`
	ExpiresAt time.Time `bun:"-"`
	storedTimes
}

var (
	_ bun.BeforeAppendModelHook = (*IoC)(nil)
	_ bun.AfterScanRowHook      = (*IoC)(nil)
)

// BeforeAppendModel sets the stored times from FirstSeen, LastSeen and
// ExpiresAt.
func (i *IoC) BeforeAppendModel(context.Context, bun.Query) error {
	i.storedTimes = storeTimes(i.FirstSeen, i.LastSeen, i.ExpiresAt)
	return nil
}

// AfterScanRow sets FirstSeen, LastSeen and ExpiresAt from the stored times.
func (i *IoC) AfterScanRow(context.Context) error {
	i.FirstSeen, i.LastSeen, i.ExpiresAt = i.storedTimes.times()
	return nil
}

// Sighting is one (feed, source) reporting an IoC. Its key is (IoCID,
// FeedID, Source).
type Sighting struct {
	bun.BaseModel `bun:"table:sightings"`

	IoCID     int64     `bun:"ioc_id,pk"`
	FeedID    int64     `bun:"feed_id,pk"`
	Source    string    `bun:"source,pk"`
	Score     int       `bun:"score,notnull"`
	Tags      []string  `bun:"tags,type:json"`
	FirstSeen time.Time `bun:"-"`
	LastSeen  time.Time `bun:"-"`
	ExpiresAt time.Time `bun:"-"`
	storedTimes
}

var (
	_ bun.BeforeAppendModelHook = (*Sighting)(nil)
	_ bun.AfterScanRowHook      = (*Sighting)(nil)
)

// BeforeAppendModel sets the stored times from FirstSeen, LastSeen and
// ExpiresAt.
func (g *Sighting) BeforeAppendModel(context.Context, bun.Query) error {
	g.storedTimes = storeTimes(g.FirstSeen, g.LastSeen, g.ExpiresAt)
	return nil
}

// AfterScanRow sets FirstSeen, LastSeen and ExpiresAt from the stored times.
func (g *Sighting) AfterScanRow(context.Context) error {
	g.FirstSeen, g.LastSeen, g.ExpiresAt = g.storedTimes.times()
	return nil
}

// storedTimes are the time columns of iocs and sightings as the databases
// keep them: unix microseconds, which write, index and compare faster than
// timestamps (a third of the bytes of SQLite's text form; docs/benchmarks.md).
// The models' hooks keep them in step with the time.Time fields, which are
// what callers use; queries compare these columns with micros(t).
type storedTimes struct {
	FirstSeenMicros int64 `bun:"first_seen,notnull"`
	LastSeenMicros  int64 `bun:"last_seen,notnull"`
	ExpiresAtMicros int64 `bun:"expires_at,notnull"`
}

func storeTimes(first, last, expires time.Time) storedTimes {
	return storedTimes{micros(first), micros(last), micros(expires)}
}

func (t storedTimes) times() (first, last, expires time.Time) {
	return fromMicros(t.FirstSeenMicros), fromMicros(t.LastSeenMicros), fromMicros(t.ExpiresAtMicros)
}

// micros is t as a time column of iocs or sightings holds it.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros is the time a time column of iocs or sightings holds, in UTC.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

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
	RunID      int64   // when non-zero, feed_runs.stored += result.Stored in the same transaction
}

// BatchResult counts what ApplyBatch changed: sightings stored, and
// sightings removed by revocation.
type BatchResult struct{ Stored, Removed int }

type valKey struct {
	kind  ioc.Kind
	value string
}

type sightKey struct {
	valKey
	source string
}

// pendingSighting is one deduplicated sighting of a batch.
type pendingSighting struct {
	sightKey
	score   int
	tags    []string
	tagJSON string
	expires int64      // unix microseconds, as stored
	agg     *aggregate // its IoC's aggregate from the batch alone
	iocID   int64      // once known
	fresh   bool       // its IoC was inserted by this batch, so it has no sighting yet
}

// storedSighting is a sighting already in the store, read back to recompute
// its IoC's aggregates. feedID is 0 for the row of an IoC without sightings.
type storedSighting struct {
	valKey
	iocID   int64
	feedID  int64
	source  string
	score   int
	tags    []string
	first   int64 // unix microseconds, as stored
	last    int64
	expires int64
}

// aggregate is the summary of an IoC's live sightings.
type aggregate struct {
	valKey
	id      int64
	score   int
	tags    []string
	tagJSON string
	first   int64 // unix microseconds, as stored
	last    int64
	expires int64
	live    bool
}

func (a *aggregate) add(score int, tags []string, first, last, expires int64) {
	if !a.live {
		a.score, a.first, a.last, a.expires = score, first, last, expires
		a.tags = slices.Clone(tags)
		a.live = true
		return
	}
	a.score = max(a.score, score)
	a.first = min(a.first, first)
	a.last = max(a.last, last)
	a.expires = max(a.expires, expires)
	for _, t := range tags {
		if !slices.Contains(a.tags, t) {
			a.tags = append(a.tags, t)
		}
	}
}

func (a *aggregate) seal() {
	slices.Sort(a.tags)
	a.tagJSON = jsonTags(a.tags)
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
	upsertSightings(ctx context.Context, feedID int64, now int64, rows []pendingSighting) error
	deleteSightings(ctx context.Context, feedID int64, rows []storedSighting) (int, error)
	deleteIoCs(ctx context.Context, ids []int64) error
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
	for i := range upserts {
		u := &upserts[i]
		a, ok := p.byKey[u.valKey]
		if !ok {
			a = &aggregate{valKey: u.valKey}
			p.byKey[u.valKey] = a
			p.fresh = append(p.fresh, a)
		}
		a.add(u.score, u.tags, now, now, u.expires)
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

// ApplyPrepared writes a prepared batch as ApplyBatch does. A batch that
// failed may be applied again.
func (s *Store) ApplyPrepared(ctx context.Context, p *PreparedBatch) (BatchResult, error) {
	b := p.b
	var res BatchResult
	if len(p.upserts) == 0 && len(p.revoked) == 0 && b.Cursor == nil {
		return res, nil
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
			return apply(ctx, &pgWriter{tx: tx})
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

func applyBatch(ctx context.Context, w batchWriter, pb *PreparedBatch) (BatchResult, error) {
	var res BatchResult
	b, now, upserts, revoked := pb.b, pb.now, pb.upserts, pb.revoked
	// First the IoCs not stored yet, with the batch's own aggregates. On a
	// first ingestion that is every one, and what follows uses no map.
	for _, a := range pb.fresh {
		a.id = 0 // from an earlier attempt at the batch
	}
	if len(pb.fresh) > 0 {
		if err := w.insertNew(ctx, pb.fresh); err != nil {
			return res, err
		}
	}
	// Then the IoCs that were stored already: read their sightings and
	// recompute from all of them.
	keys := map[ioc.Kind][]string{}
	seen := map[valKey]bool{}
	need := func(k valKey) {
		if !seen[k] {
			seen[k] = true
			keys[k.kind] = append(keys[k.kind], k.value)
		}
	}
	for i := range upserts {
		if upserts[i].agg.id == 0 {
			need(upserts[i].valKey)
		}
	}
	for _, k := range revoked {
		if a := pb.byKey[k.valKey]; a == nil || a.id == 0 {
			need(k.valKey)
		}
	}
	var stored []storedSighting
	if len(keys) > 0 {
		var err error
		if stored, err = w.sightings(ctx, keys); err != nil {
			return res, err
		}
	}
	var batchKeys, isRevoked map[sightKey]bool
	if len(stored) > 0 {
		batchKeys = make(map[sightKey]bool, len(upserts))
		for _, p := range upserts {
			batchKeys[p.sightKey] = true
		}
		isRevoked = make(map[sightKey]bool, len(revoked))
		for _, k := range revoked {
			isRevoked[k] = true
		}
	}
	old := map[valKey]*aggregate{}
	var oldOrder []*aggregate
	firstSeen := map[sightKey]int64{}
	var revokedHere []storedSighting
	for _, st := range stored {
		a, ok := old[st.valKey]
		if !ok {
			a = &aggregate{valKey: st.valKey, id: st.iocID}
			old[st.valKey] = a
			oldOrder = append(oldOrder, a)
		}
		if st.feedID == 0 {
			continue // an IoC without sightings
		}
		sk := sightKey{st.valKey, st.source}
		if st.feedID == b.FeedID {
			if batchKeys[sk] {
				firstSeen[sk] = st.first
				continue
			}
			if isRevoked[sk] {
				revokedHere = append(revokedHere, st)
				continue
			}
		}
		if st.expires <= now {
			continue // expired, waiting for the sweeper
		}
		a.add(st.score, st.tags, st.first, st.last, st.expires)
	}
	for i := range upserts {
		p := &upserts[i]
		if p.agg.id != 0 {
			p.iocID, p.fresh = p.agg.id, true
			continue
		}
		p.fresh = false // from an earlier attempt at the batch
		a := old[p.valKey]
		if a == nil {
			return res, fmt.Errorf("indicator %s %q neither inserted nor found", p.kind, p.value)
		}
		p.iocID = a.id
		first, ok := firstSeen[p.sightKey]
		if !ok {
			first = now
		}
		a.add(p.score, p.tags, first, now, p.expires)
	}
	var live []*aggregate
	var dead []int64
	for _, a := range oldOrder {
		if !a.live {
			dead = append(dead, a.id)
			continue
		}
		a.seal()
		live = append(live, a)
	}
	slices.SortFunc(live, func(x, y *aggregate) int { return cmpValKey(x.valKey, y.valKey) })
	if len(revokedHere) > 0 {
		n, err := w.deleteSightings(ctx, b.FeedID, revokedHere)
		if err != nil {
			return res, err
		}
		res.Removed = n
	}
	if len(dead) > 0 {
		if err := w.deleteIoCs(ctx, dead); err != nil {
			return res, err
		}
	}
	if len(live) > 0 {
		if err := w.updateIoCs(ctx, live); err != nil {
			return res, err
		}
	}
	if len(upserts) > 0 {
		if err := w.upsertSightings(ctx, b.FeedID, now, upserts); err != nil {
			return res, err
		}
		res.Stored = len(upserts)
	}
	if err := finishBatch(ctx, w, b, res); err != nil {
		return res, err
	}
	return res, nil
}

func cmpValKey(x, y valKey) int {
	if c := strings.Compare(string(x.kind), string(y.kind)); c != 0 {
		return c
	}
	return strings.Compare(x.value, y.value)
}

// finishBatch records the feed's cursor, last ingestion and the run's count
// in the batch's transaction.
func finishBatch(ctx context.Context, w batchWriter, b Batch, res BatchResult) error {
	// One statement moves the feed's cursor and last ingestion and checks,
	// under the row's lock, that the feed is still enabled: a run going on
	// in another instance while the feed is disabled, reset or deleted
	// writes nothing more.
	var cursor any // NULL keeps the cursor
	if b.Cursor != nil {
		cursor = *b.Cursor
	}
	n, err := w.exec(ctx, `UPDATE feeds SET cursor = COALESCE($1, cursor),
		last_ingestion = CASE WHEN $2 THEN $3 ELSE last_ingestion END WHERE id = $4 AND enabled`,
		cursor, res.Stored > 0, b.Now, b.FeedID)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("feed %d: %w", b.FeedID, ErrFeedDisabled)
	}
	if b.RunID != 0 && res.Stored > 0 {
		n, err := w.exec(ctx, "UPDATE feed_runs SET stored = stored + $1 WHERE id = $2 AND feed_id = $3", int64(res.Stored), b.RunID, b.FeedID)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("run %d of feed %d: %w", b.RunID, b.FeedID, ErrNotFound)
		}
	}
	return nil
}

// ---- SQLite ----

// sqliteLookupChunk is the most values per IN list of a lookup, well under
// SQLite's limit of 32766 bound variables.
const sqliteLookupChunk = 4000

// sqliteWriter writes a batch with multi-row INSERTs of sqliteChunkRows
// rows, one prepared statement per table reused for every full chunk.
type sqliteWriter struct {
	tx bun.Tx
}

func (w *sqliteWriter) exec(ctx context.Context, query string, args ...any) (int64, error) {
	r, err := w.tx.Tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// insertNew inserts the IoCs with multi-row INSERTs, which return no ids.
// iocs.id is AUTOINCREMENT and this transaction is the only writer: every
// row inserted gets an id above any the table had, in the order of the
// rows. So when every row went in and the largest id moved by their number,
// their ids are the next ones in order; otherwise (some were stored
// already) the ids above the old largest are read back.
func (w *sqliteWriter) insertNew(ctx context.Context, aggs []*aggregate) error {
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
	var inserted int64
	err := ins.exec(ctx, w.tx.Tx, "INSERT INTO iocs ", " ON CONFLICT (type, value) DO NOTHING", func(r sql.Result) error {
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
	if r.n > 0 {
		first := v(0)
		same := true
		for i := 1; i < r.n && same; i++ {
			same = v(i) == first
		}
		// The driver hands SQL text to SQLite as a C string: a NUL would
		// cut the statement short, so such a value is always bound.
		if same && !strings.ContainsRune(first, 0) {
			r.literal(col, sqliteQuote(first))
			return
		}
	}
	r.bind(col, func(i int) any { return v(i) })
}

// integer adds an integer column: a literal when every row has the same
// value, bound otherwise.
func (r *rowInsert) integer(col string, v func(i int) int64) {
	if r.n > 0 {
		first := v(0)
		same := true
		for i := 1; i < r.n && same; i++ {
			same = v(i) == first
		}
		if same {
			r.literal(col, strconv.FormatInt(first, 10))
			return
		}
	}
	r.bind(col, func(i int) any { return v(i) })
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
	for kind, values := range keys {
		for chunk := range slices.Chunk(values, sqliteLookupChunk) {
			q := `SELECT i.id, i.value, s.feed_id, s.source, s.score, s.tags, s.first_seen, s.last_seen, s.expires_at
FROM iocs i LEFT JOIN sightings s ON s.ioc_id = i.id WHERE i.type = ? AND i.value IN (` + placeholders(len(chunk)) + `)`
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
					feedID, score       sql.NullInt64
					source, tags        sql.NullString
					first, last, expire sql.NullInt64
				)
				if err := rows.Scan(&st.iocID, &st.value, &feedID, &source, &score, &tags, &first, &last, &expire); err != nil {
					rows.Close()
					return nil, err
				}
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
	st, err := w.tx.Tx.PrepareContext(ctx, `UPDATE iocs SET score = ?, tags = ?, first_seen = ?, last_seen = ?, expires_at = ? WHERE id = ?`)
	if err != nil {
		return err
	}
	defer st.Close()
	rowCtx := context.WithoutCancel(ctx) // see rowInsert.exec
	for i, a := range aggs {
		if i%rowCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if _, err := st.ExecContext(rowCtx, a.score, a.tagJSON, a.first, a.last, a.expires, a.id); err != nil {
			return err
		}
	}
	return nil
}

func (w *sqliteWriter) upsertSightings(ctx context.Context, feedID int64, now int64, rows []pendingSighting) error {
	ins := rowInsert{n: len(rows)}
	ins.bind("ioc_id", func(i int) any { return rows[i].iocID })
	ins.literal("feed_id", strconv.FormatInt(feedID, 10))
	ins.bind("source", func(i int) any { return rows[i].source })
	ins.bind("score", func(i int) any { return rows[i].score })
	ins.text("tags", func(i int) string { return rows[i].tagJSON })
	ins.literal("first_seen", strconv.FormatInt(now, 10))
	ins.literal("last_seen", strconv.FormatInt(now, 10))
	ins.integer("expires_at", func(i int) int64 { return rows[i].expires })
	return ins.exec(ctx, w.tx.Tx, "INSERT INTO sightings ", ` ON CONFLICT (ioc_id, feed_id, source) DO UPDATE SET
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
		r, err := w.tx.Tx.ExecContext(rowCtx, "DELETE FROM sightings WHERE ioc_id = ? AND feed_id = ? AND source = ?", st.iocID, feedID, st.source)
		if err != nil {
			return n, err
		}
		c, _ := r.RowsAffected()
		n += int(c)
	}
	return n, nil
}

func (w *sqliteWriter) deleteIoCs(ctx context.Context, ids []int64) error {
	if _, err := w.tx.ExecContext(ctx, "DELETE FROM sightings WHERE ioc_id IN (?)", bun.In(ids)); err != nil {
		return err
	}
	_, err := w.tx.ExecContext(ctx, "DELETE FROM iocs WHERE id IN (?)", bun.In(ids))
	return err
}

// placeholders returns n "?" separated by commas.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// ---- PostgreSQL ----

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
	rows, err := w.tx.Query(ctx, `INSERT INTO iocs (type, value, score, tags, first_seen, last_seen, expires_at)
SELECT type, value, score, tags, first_seen, last_seen, expires_at FROM tifeeds_iocs_in ORDER BY type, value
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
	_, err := w.tx.Exec(ctx, `INSERT INTO iocs (type, value, score, tags, first_seen, last_seen, expires_at)
SELECT type, value, score, tags, first_seen, last_seen, expires_at FROM tifeeds_iocs_in ORDER BY type, value
ON CONFLICT (type, value) DO UPDATE SET score = excluded.score, tags = excluded.tags,
first_seen = excluded.first_seen, last_seen = excluded.last_seen, expires_at = excluded.expires_at`)
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

// ---- expiry and deletion ----

// recomputeSQL sets the aggregates of the IoCs whose ids are bound to the
// single IN (?) from their remaining sightings.
func (s *Store) recomputeSQL() string {
	tags := `(SELECT json_group_array(t) FROM (SELECT DISTINCT j.value AS t FROM sightings s, json_each(s.tags) j
		WHERE s.ioc_id = iocs.id ORDER BY 1))`
	if s.Dialect == Postgres {
		tags = `(SELECT coalesce(jsonb_agg(t ORDER BY t), '[]'::jsonb) FROM (SELECT DISTINCT jsonb_array_elements_text(s.tags) AS t
		FROM sightings s WHERE s.ioc_id = iocs.id) u)`
	}
	return `UPDATE iocs SET
	score = (SELECT max(score) FROM sightings s WHERE s.ioc_id = iocs.id),
	tags = ` + tags + `,
	first_seen = (SELECT min(first_seen) FROM sightings s WHERE s.ioc_id = iocs.id),
	last_seen = (SELECT max(last_seen) FROM sightings s WHERE s.ioc_id = iocs.id),
	expires_at = (SELECT max(expires_at) FROM sightings s WHERE s.ioc_id = iocs.id)
WHERE id IN (?) AND EXISTS (SELECT 1 FROM sightings s WHERE s.ioc_id = iocs.id)`
}

// writeTx runs fn in a transaction that may change sightings: on PostgreSQL
// it first takes the IoC write lock (see iocWriteLockID).
func (s *Store) writeTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if s.Dialect == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", int64(iocWriteLockID)); err != nil {
				return err
			}
		}
		return fn(ctx, tx)
	})
}

// dropOrphans deletes those of ids left without a sighting and recomputes
// the others; it returns how many IoCs it deleted.
func (s *Store) dropOrphans(ctx context.Context, tx bun.Tx, ids []int64) (int64, error) {
	r, err := tx.ExecContext(ctx, `DELETE FROM iocs WHERE id IN (?)
AND NOT EXISTS (SELECT 1 FROM sightings s WHERE s.ioc_id = iocs.id)`, bun.In(ids))
	if err != nil {
		return 0, err
	}
	n, _ := r.RowsAffected()
	if _, err := tx.ExecContext(ctx, s.recomputeSQL(), bun.In(ids)); err != nil {
		return n, err
	}
	return n, nil
}

// maintenanceBatch is how many sightings DeleteFeedSightings removes per
// transaction: small enough that ingestion waits at most a fraction of a
// second for the write lock.
const maintenanceBatch = 5000

// DeleteFeedSightings removes the feed's sightings and the IoCs left without
// one, in transactions of a few thousand IoCs (no long lock), recomputing the
// aggregates of IoCs that keep sightings of other feeds.
func (s *Store) DeleteFeedSightings(ctx context.Context, feedID int64) (removedIoCs int64, err error) {
	for {
		var done bool
		err := s.writeTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			// The first sightings in the feed's index (the order asks
			// PostgreSQL for it too); they are all deleted below.
			var ids []int64
			if err := tx.NewRaw(`SELECT ioc_id FROM sightings WHERE feed_id = ? ORDER BY expires_at LIMIT ?`,
				feedID, maintenanceBatch).Scan(ctx, &ids); err != nil {
				return err
			}
			if len(ids) == 0 {
				done = true
				return nil
			}
			slices.Sort(ids)
			ids = slices.Compact(ids)
			if _, err := tx.ExecContext(ctx, "DELETE FROM sightings WHERE feed_id = ? AND ioc_id IN (?)", feedID, bun.In(ids)); err != nil {
				return err
			}
			n, err := s.dropOrphans(ctx, tx, ids)
			removedIoCs += n
			return err
		})
		if err != nil {
			return removedIoCs, fmt.Errorf("store: unable to delete the sightings of feed %d: %w", feedID, err)
		}
		if done {
			return removedIoCs, nil
		}
	}
}

// SweepExpired deletes sightings that expired at now and the IoCs left
// without one, feed by feed in transactions of batchSize sightings,
// recomputing the aggregates of IoCs that keep live sightings. It also
// removes IoCs whose own expiry has passed, which catches any IoC left
// behind by a feed row deleted without DeleteFeedSightings.
func (s *Store) SweepExpired(ctx context.Context, now time.Time, batchSize int) (sightings, iocs int64, err error) {
	if batchSize <= 0 {
		batchSize = maintenanceBatch
	}
	nowUS := micros(now)
	// Sightings are indexed by (feed, expiry): every sighting has a feed
	// (a foreign key with cascade), so sweeping each feed sweeps them all.
	var feeds []int64
	if err := s.DB.NewRaw("SELECT id FROM feeds ORDER BY id").Scan(ctx, &feeds); err != nil {
		return 0, 0, fmt.Errorf("store: unable to sweep expired sightings: %w", err)
	}
	for _, feedID := range feeds {
		for {
			var n int
			err := s.writeTx(ctx, func(ctx context.Context, tx bun.Tx) error {
				var ids []int64
				if err := tx.NewRaw(`SELECT ioc_id FROM sightings WHERE feed_id = ? AND expires_at <= ? ORDER BY expires_at LIMIT ?`,
					feedID, nowUS, batchSize).Scan(ctx, &ids); err != nil {
					return err
				}
				n = len(ids)
				if n == 0 {
					return nil
				}
				slices.Sort(ids)
				ids = slices.Compact(ids)
				// By key: "+" keeps the planner off the (feed, expiry)
				// range, which holds every expired sighting of the feed.
				r, err := tx.ExecContext(ctx, "DELETE FROM sightings WHERE ioc_id IN (?) AND feed_id = ? AND +expires_at <= ?",
					bun.In(ids), feedID, nowUS)
				if err != nil {
					return err
				}
				c, _ := r.RowsAffected()
				sightings += c
				d, err := s.dropOrphans(ctx, tx, ids)
				iocs += d
				return err
			})
			if err != nil {
				return sightings, iocs, fmt.Errorf("store: unable to sweep the expired sightings of feed %d: %w", feedID, err)
			}
			if n < batchSize {
				break
			}
		}
	}
	for {
		var n int
		err := s.writeTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			var ids []int64
			if err := tx.NewRaw("SELECT id FROM iocs WHERE expires_at <= ? ORDER BY expires_at LIMIT ?", nowUS, batchSize).
				Scan(ctx, &ids); err != nil {
				return err
			}
			n = len(ids)
			if n == 0 {
				return nil
			}
			// Sightings here are live (expired ones went above): the IoC's
			// aggregates were stale, so recompute rather than delete.
			d, err := s.dropOrphans(ctx, tx, ids)
			iocs += d
			return err
		})
		if err != nil {
			return sightings, iocs, fmt.Errorf("store: unable to sweep expired indicators: %w", err)
		}
		if n < batchSize {
			return sightings, iocs, nil
		}
	}
}

// CountFeedIoCs returns how many IoCs the feed has a sighting of.
func (s *Store) CountFeedIoCs(ctx context.Context, feedID int64) (int64, error) {
	var n int64
	if err := s.DB.NewRaw("SELECT count(DISTINCT ioc_id) FROM sightings WHERE feed_id = ?", feedID).Scan(ctx, &n); err != nil {
		return 0, fmt.Errorf("store: unable to count the indicators of feed %d: %w", feedID, err)
	}
	return n, nil
}

// ---- queries ----

// IoCFilter selects IoCs; zero fields select everything.
type IoCFilter struct {
	Types []ioc.Kind
	// Value is a raw value matched exactly after normalisation as each kind
	// of Types (every kind when Types is empty), as ingestion would store it.
	Value         string
	ValuePrefix   string
	Search        string // case-insensitive substring of the value
	FeedID        int64
	Tag           string
	MinScore      *int
	ExpiresBefore *time.Time
	ExpiresAfter  *time.Time
}

// IoCOrderField is a column IoCs can be ordered by; ties go by id.
type IoCOrderField string

// The orders of IoCs.
const (
	IoCOrderID        IoCOrderField = "id"
	IoCOrderValue     IoCOrderField = "value"
	IoCOrderType      IoCOrderField = "type"
	IoCOrderScore     IoCOrderField = "score"
	IoCOrderLastSeen  IoCOrderField = "last_seen"
	IoCOrderExpiresAt IoCOrderField = "expires_at"
)

// IoCOrder is the order of a page of IoCs.
type IoCOrder struct {
	Field IoCOrderField
	Desc  bool
}

// IoCPage is one page of IoCs and where the next starts.
type IoCPage struct {
	IoCs        []IoC
	Total       int
	EndCursor   string
	HasNextPage bool
}

// MaxIoCPage is the largest page IoCs returns.
const MaxIoCPage = 1000

// iocCursor is the position after a row, in the order it was read in;
// encoded as base64url JSON so clients treat it as opaque.
type iocCursor struct {
	Field IoCOrderField `json:"f"`
	Desc  bool          `json:"d,omitempty"`
	Value any           `json:"v,omitempty"`
	ID    int64         `json:"id"`
}

func encodeCursor(o IoCOrder, row *IoC) string {
	c := iocCursor{Field: o.Field, Desc: o.Desc, ID: row.ID}
	switch o.Field {
	case IoCOrderValue:
		c.Value = row.Value
	case IoCOrderType:
		c.Value = string(row.Type)
	case IoCOrderScore:
		c.Value = row.Score
	case IoCOrderLastSeen:
		c.Value = row.LastSeen.UTC().Format(time.RFC3339Nano)
	case IoCOrderExpiresAt:
		c.Value = row.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads after, which must come from a page of the same order,
// and returns the value to compare the order column with.
func decodeCursor(after string, o IoCOrder) (any, int64, error) {
	bad := Invalid("after", "not a cursor of this list in this order")
	b, err := base64.RawURLEncoding.DecodeString(after)
	if err != nil {
		return nil, 0, bad
	}
	var c iocCursor
	if err := json.Unmarshal(b, &c); err != nil || c.Field != o.Field || c.Desc != o.Desc {
		return nil, 0, bad
	}
	switch o.Field {
	case IoCOrderID:
		return nil, c.ID, nil
	case IoCOrderValue, IoCOrderType:
		if v, ok := c.Value.(string); ok {
			return v, c.ID, nil
		}
	case IoCOrderScore:
		if v, ok := c.Value.(float64); ok {
			return int(v), c.ID, nil
		}
	case IoCOrderLastSeen, IoCOrderExpiresAt:
		if v, ok := c.Value.(string); ok {
			if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
				return t, c.ID, nil
			}
		}
	}
	return nil, 0, bad
}

// likeEscape escapes s for LIKE ... ESCAPE '\'.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// applyIoCFilter adds f's conditions to q; ok is false when f can match
// nothing (a value that is no valid indicator of the asked kinds).
func (s *Store) applyIoCFilter(q *bun.SelectQuery, f IoCFilter) (*bun.SelectQuery, bool, error) {
	for _, k := range f.Types {
		if _, err := ioc.ParseKind(string(k)); err != nil {
			return q, false, Invalid("filter.type", "%v", err)
		}
	}
	if len(f.Types) > 0 {
		kinds := make([]string, len(f.Types))
		for i, k := range f.Types {
			kinds[i] = string(k)
		}
		q = q.Where("iocs.type IN (?)", bun.In(kinds))
	}
	if f.Value != "" {
		kinds := f.Types
		if len(kinds) == 0 {
			kinds = ioc.Kinds
		}
		var match []valKey
		for _, k := range kinds {
			if v, err := ioc.Normalize(k, f.Value); err == nil {
				match = append(match, valKey{k, v})
			}
		}
		if len(match) == 0 {
			return q, false, nil
		}
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			for _, m := range match {
				q = q.WhereOr("iocs.type = ? AND iocs.value = ?", string(m.kind), m.value)
			}
			return q
		})
	}
	if f.ValuePrefix != "" {
		// A range rather than LIKE, so that the byte-ordered index serves it
		// on both databases; no valid UTF-8 string sorts after U+10FFFF.
		q = q.Where("iocs.value >= ? AND iocs.value < ?", f.ValuePrefix, f.ValuePrefix+"\U0010FFFF")
	}
	if f.Search != "" {
		op := "LIKE" // case-insensitive for ASCII on SQLite
		if s.Dialect == Postgres {
			op = "ILIKE"
		}
		q = q.Where("iocs.value "+op+" ? ESCAPE '\\'", "%"+likeEscape(f.Search)+"%")
	}
	if f.FeedID != 0 {
		// Driven by the feed's index: a small feed among many IoCs costs
		// its own size, not a probe per IoC.
		q = q.Where("iocs.id IN (SELECT s.ioc_id FROM sightings s WHERE s.feed_id = ?)", f.FeedID)
	}
	if f.Tag != "" {
		if s.Dialect == Postgres {
			q = q.Where("iocs.tags @> ?::jsonb", jsonTags([]string{f.Tag}))
		} else {
			q = q.Where("EXISTS (SELECT 1 FROM json_each(iocs.tags) j WHERE j.value = ?)", f.Tag)
		}
	}
	if f.MinScore != nil {
		q = q.Where("iocs.score >= ?", *f.MinScore)
	}
	if f.ExpiresBefore != nil {
		q = q.Where("iocs.expires_at < ?", micros(*f.ExpiresBefore))
	}
	if f.ExpiresAfter != nil {
		q = q.Where("iocs.expires_at > ?", micros(*f.ExpiresAfter))
	}
	return q, true, nil
}

// IoCs returns the first IoCs matching f after the cursor after (empty for
// the start), in order o, with the total that match f. Paging is by keyset
// (the order column, then id), so rows written between two pages neither
// repeat nor push rows out of the next page.
func (s *Store) IoCs(ctx context.Context, f IoCFilter, o IoCOrder, first int, after string) (*IoCPage, error) {
	if first < 0 || first > MaxIoCPage {
		return nil, Invalid("first", "must be between 0 and %d", MaxIoCPage)
	}
	switch o.Field {
	case "":
		o.Field = IoCOrderID
	case IoCOrderID, IoCOrderValue, IoCOrderType, IoCOrderScore, IoCOrderLastSeen, IoCOrderExpiresAt:
	default:
		return nil, Invalid("orderBy", "unknown order %q", o.Field)
	}
	var cursorValue any
	var cursorID int64
	if after != "" {
		var err error
		if cursorValue, cursorID, err = decodeCursor(after, o); err != nil {
			return nil, err
		}
	}
	page := &IoCPage{IoCs: []IoC{}}
	count, ok, err := s.applyIoCFilter(s.DB.NewSelect().Model((*IoC)(nil)), f)
	if err != nil || !ok {
		return page, err
	}
	total, err := count.Count(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: unable to count indicators: %w", err)
	}
	page.Total = int(total)
	if first == 0 {
		return page, nil
	}
	q, _, _ := s.applyIoCFilter(s.DB.NewSelect().Model(&page.IoCs), f)
	dir, cmp := "ASC", ">"
	if o.Desc {
		dir, cmp = "DESC", "<"
	}
	col := bun.Ident("iocs." + string(o.Field))
	if after != "" {
		if o.Field == IoCOrderID {
			q = q.Where("iocs.id "+cmp+" ?", cursorID)
		} else {
			if t, isTime := cursorValue.(time.Time); isTime {
				cursorValue = micros(t)
			}
			q = q.Where("(?, iocs.id) "+cmp+" (?, ?)", col, cursorValue, cursorID)
		}
	}
	if o.Field != IoCOrderID {
		q = q.OrderExpr("? "+dir, col)
	}
	q = q.OrderExpr("iocs.id " + dir).Limit(int64(first) + 1)
	if err := q.Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	if len(page.IoCs) > first {
		page.IoCs = page.IoCs[:first]
		page.HasNextPage = true
	}
	for i := range page.IoCs {
		if page.IoCs[i].Tags == nil {
			page.IoCs[i].Tags = []string{}
		}
	}
	if n := len(page.IoCs); n > 0 {
		page.EndCursor = encodeCursor(o, &page.IoCs[n-1])
	}
	return page, nil
}

// IoC returns the IoC with id.
func (s *Store) IoC(ctx context.Context, id int64) (*IoC, error) {
	i := new(IoC)
	if err := s.DB.NewSelect().Model(i).Where("id = ?", id).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("indicator %d: %w", id, ErrNotFound)
		}
		return nil, fmt.Errorf("store: unable to read indicator %d: %w", id, err)
	}
	if i.Tags == nil {
		i.Tags = []string{}
	}
	return i, nil
}

// Sightings returns the sightings of an IoC, highest score first.
func (s *Store) Sightings(ctx context.Context, iocID int64) ([]Sighting, error) {
	var out []Sighting
	if err := s.DB.NewSelect().Model(&out).Where("ioc_id = ?", iocID).
		OrderExpr("score DESC, feed_id, source").Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: unable to read the sightings of indicator %d: %w", iocID, err)
	}
	for i := range out {
		if out[i].Tags == nil {
			out[i].Tags = []string{}
		}
	}
	return out, nil
}
