package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// iocKeys is how a page reads its IoCs through a key table (ioc_keys.go):
// the keys of one condition of its filter (a tag, a range of an order's
// keys), or of its order.
type iocKeys struct {
	// join makes an IoC query read the key table x joined to iocs, x
	// leading, through the keys that hold; of the IoCs with tag, when it
	// is not "", probed through their tag keys (joinKeys).
	join func(q *bun.SelectQuery, tag string) *bun.SelectQuery
	// proves drops from a filter the condition that a key that holds
	// proves, which iocs' own column need not check again.
	proves func(f *IoCFilter)
	// countSQL counts the keys (holding or not) up to a LIMIT bound after
	// countArgs.
	countSQL  string
	countArgs []any
	// kept is the writers' kept count of the IoCs the condition selects,
	// when there is one (0 otherwise): past sparseKeys the keys are not
	// counted (a common tag's 50,001 keys: 4-9 ms of every page at
	// 10,000,000 IoCs). Below, they are: keys outlive what they no longer
	// hold until the cleaner's pass.
	kept int64
	// unchangedSQL, for an order's keys, counts up to a LIMIT bound after
	// countArgs and the keys' stamp those whose IoC has not changed since
	// the key was made, which hold without a look at the IoC's row (only
	// SQLite has order keys, hence its INDEXED BY).
	unchangedSQL string
	// heldSQL, for an order's keys, reads a bound of the keys of the
	// order's table that no longer hold and counts the keys of the range
	// (countArgs) up to a LIMIT past it (heldKeysPast).
	heldSQL string
	// keys is how many keys countSQL counted (sparseKeys+1 at most), or
	// past sparseKeys the kept count.
	keys int
	// col and id are x's columns in the page's order when the key table's
	// own order is the page's (col is empty in id order): the planner then
	// walks the keys and stops with the page. Empty id: the keys found are
	// sorted.
	col, id string
	// sparse says the keys are few enough (sparseKeys) for a page to read
	// them all and sort them.
	sparse bool
}

// provesAll says whether a key that holds proves every condition of f.
func (k *iocKeys) provesAll(f IoCFilter) bool {
	if k.proves == nil {
		return false
	}
	k.proves(&f)
	return f.empty()
}

// ordered says whether the keys are in the page's order.
func (k *iocKeys) ordered() bool { return k.id != "" }

// keyPlan is how a page of IoCs reads through the key tables.
type keyPlan struct {
	// stamp is the key tables' stamp the page reads with.
	stamp int64
	// find, when set, finds the IoCs of the filter through the keys of one
	// of its conditions: when its keys are few (sparse), it counts them and
	// reads the page; when they are many, it reads the page if its keys are
	// in the page's order.
	find *iocKeys
	// walk, when set, is the keys of the page's order: the page walks them
	// with the filter checked on iocs when the filter is empty or matches
	// more IoCs than the count cap, so that the walk soon meets a page of
	// them.
	walk *iocKeys
	// count, when set, counts the filter through its one condition's
	// keys although they are many: the filter has no other condition, so
	// the walk meets a match at every key that holds and stops at the
	// count cap. Counted on iocs' columns instead, the count walked the ids
	// from the start and, when the matches were the newest IoCs (the
	// short-lived ones a sweep was expiring), read nearly all of them:
	// expiresBefore +1d took 0.3-2.8 s at 1-10 M IoCs.
	count *iocKeys
	// stored is how many IoCs there are (ioc_stats), and changed how many
	// changed since the stamp, as it was read.
	stored  int64
	changed int
	// settled says a sparse find is the page's way, not to be weighed
	// against a walk of the order (sparseWalked).
	settled bool
}

// sparseKeys is the most keys of a filter's condition that a page in
// another order reads and sorts: past it, the page walks its own order
// and stops early, most IoCs meeting the condition.
var sparseKeys = 50_000

// tagKeys reads the IoCs of tag through ioc_tag_keys, in id order when
// byID; kept is the writers' count of them.
func tagKeys(tag string, kept int64, byID bool) *iocKeys {
	k := &iocKeys{
		join: func(q *bun.SelectQuery, _ string) *bun.SelectQuery {
			// Its keys prove the tag (proves): none is asked of it.
			return joinKeys(q, "ioc_tag_keys", tagKeyHolds, "").Where("x.tag = ?", tag)
		},
		proves:    func(f *IoCFilter) { f.Tag = "" },
		countSQL:  "SELECT count(*) FROM (SELECT 1 FROM ioc_tag_keys WHERE tag = ? LIMIT ?) k",
		countArgs: []any{tag},
		kept:      kept,
	}
	if byID {
		k.id = "x.id"
	}
	return k
}

// joinKeys makes q read key table x joined to the IoCs whose keys hold
// (holds, a condition on x and iocs), x leading: each key probes iocs by
// its id, so a walk of x in its order stops with the page. SQLite's CROSS
// JOIN keeps its tables in that order. PostgreSQL's may swap them, and did
// while keys held by stamp: the planner took a key's stamp equal to its
// IoC's for a one-in-a-million coincidence, expected 104 of 1,000,000 keys
// to hold, and walked all of iocs probing the keys before sorting (1.3-2.8
// s a first page). A lateral probe that the planner may not pull up
// (OFFSET 0) leaves it no such plan.
//
// With a tag, which the IoCs must have and x's keys do not prove, SQLite
// probes each key's IoC in the tag keys, between x and iocs, before it
// reads the IoC's row, whose tags are then checked only for the keys that
// passed. The tag keys of an IoC are complete as long as its order keys
// are (keyArms' stamp). At 10,000,000 IoCs, a page of the tag of 1 % by
// score desc walked some 10,000 score keys, reading each one's row: 39-74
// ms; 4-5 ms probing first. (As an EXISTS, the probe came after the row:
// SQLite 3.54 made it a join, and put it last.) PostgreSQL has no order
// keys: there the tag's own keys lead.
func joinKeys(q *bun.SelectQuery, table, holds, tag string) *bun.SelectQuery {
	if q.Dialect().Name() == dialect.PG {
		return q.ModelTableExpr("? AS x CROSS JOIN LATERAL (SELECT * FROM iocs WHERE iocs.id = x.id AND "+holds+" OFFSET 0) AS iocs",
			bun.Ident(table))
	}
	if tag != "" {
		return q.ModelTableExpr("? AS x CROSS JOIN ioc_tag_keys AS tk CROSS JOIN iocs AS iocs", bun.Ident(table)).
			Where("tk.tag = ? AND tk.id = x.id", tag).
			Where("iocs.id = x.id AND " + holds)
	}
	return q.ModelTableExpr("? AS x CROSS JOIN iocs AS iocs", bun.Ident(table)).
		Where("iocs.id = x.id AND " + holds)
}

// keyRange is the keys of one order from lo to hi, both included.
type keyRange struct {
	order  orderKey
	lo, hi int64
}

// bounded says whether the range leaves out some keys.
func (r keyRange) bounded() bool { return r.lo > math.MinInt64 || r.hi < math.MaxInt64 }

// rangeCondition is a condition of a filter on an integer-valued column
// that IoCs are ordered by: the column (field) from lo to hi, both
// included, and what it proves of the filter (drops the condition).
type rangeCondition struct {
	field  IoCOrderField
	lo, hi int64
	proves func(*IoCFilter)
}

// rangeConditions returns f's conditions on integer-valued columns:
// minScore and the expiry bounds.
func rangeConditions(f IoCFilter) []rangeCondition {
	var conds []rangeCondition
	if f.MinScore != nil {
		conds = append(conds, rangeCondition{IoCOrderScore, int64(*f.MinScore), math.MaxInt64,
			func(f *IoCFilter) { f.MinScore = nil }})
	}
	if f.ExpiresBefore != nil || f.ExpiresAfter != nil {
		c := rangeCondition{IoCOrderExpiresAt, math.MinInt64, math.MaxInt64,
			func(f *IoCFilter) { f.ExpiresBefore, f.ExpiresAfter = nil, nil }}
		// Times are whole microseconds: < b is <= b-1, > a is >= a+1.
		if f.ExpiresAfter != nil {
			c.lo = micros(*f.ExpiresAfter) + 1
		}
		if f.ExpiresBefore != nil {
			c.hi = micros(*f.ExpiresBefore) - 1
		}
		conds = append(conds, c)
	}
	return conds
}

// keyRanges returns the ranges of order keys that f's range conditions
// select, each with what it proves of f: none where the orders have no
// keys (PostgreSQL's indexes on iocs serve those conditions).
func (s *Store) keyRanges(f IoCFilter) (ranges []keyRange, proves []func(*IoCFilter)) {
	for _, c := range rangeConditions(f) {
		if k, ok := s.orderKeyOf(c.field); ok {
			ranges = append(ranges, keyRange{k, c.lo, c.hi})
			proves = append(proves, c.proves)
		}
	}
	return ranges, proves
}

// orderKeysIn reads the IoCs whose key of r's order is in r through the
// order's keys, walking them in their order when ordered.
func orderKeysIn(r keyRange, ordered bool, proves func(*IoCFilter)) *iocKeys {
	k := &iocKeys{
		join: func(q *bun.SelectQuery, tag string) *bun.SelectQuery {
			q = joinKeys(q, r.order.table, r.order.holds(), tag)
			if r.bounded() {
				q = q.Where("x.key BETWEEN ? AND ?", r.lo, r.hi)
			}
			return q
		},
		proves:    proves,
		countSQL:  "SELECT count(*) FROM (SELECT 1 FROM " + r.order.table + " WHERE key BETWEEN ? AND ? LIMIT ?) k",
		countArgs: []any{r.lo, r.hi},
		unchangedSQL: "SELECT count(*) FROM (SELECT 1 FROM " + r.order.table + ` x WHERE x.key BETWEEN ? AND ? AND x.stamp <= ?
AND EXISTS (SELECT 1 FROM iocs INDEXED BY iocs_changed_idx WHERE iocs.changed_at = x.stamp AND iocs.id = x.id) LIMIT ?) k`,
		heldSQL: `WITH stale AS MATERIALIZED (SELECT CASE WHEN c.n <= ? THEN r.rows - st.ioc_count + c.n END AS n
	FROM ioc_order_key_rows r, ioc_stats st,
	(SELECT count(*) AS n FROM (SELECT 1 FROM iocs INDEXED BY iocs_changed_idx WHERE changed_at > ? LIMIT ?)) c
	WHERE r.name = '` + r.order.table + `' AND st.id = 1)
SELECT (SELECT n FROM stale), (SELECT count(*) FROM (SELECT 1 FROM ` + r.order.table + ` WHERE key BETWEEN ? AND ?
	LIMIT ? + (SELECT min(max(coalesce(n, 0), 0), ?) FROM stale)))`,
	}
	if ordered {
		k.col, k.id = "x.key", "x.id"
	}
	return k
}

// keysFor says how a page of f in order o reads through the key tables;
// nil: it does not. An order with keys (SCORE, FIRST_SEEN, LAST_SEEN,
// EXPIRATION_DATE on SQLite; on PostgreSQL indexes on iocs serve them) has
// them to walk. A tag, and on SQLite minScore or an expiry range, finds
// the IoCs through its keys unless another condition is the one
// that finds them (a value, a prefix, a feed, a search); of several, the
// one with the fewest keys. Nothing does while the key indexer lags far
// behind (see recentKeysMax).
func (s *Store) keysFor(ctx context.Context, f IoCFilter, o IoCOrder) (*keyPlan, error) {
	if f.Value != "" {
		return nil, nil // a few IoCs, through the unique (type, value) index
	}
	plan := &keyPlan{}
	walkKey, walks := s.orderKeyOf(o.Field)
	if walks {
		plan.walk = orderKeysIn(keyRange{walkKey, math.MinInt64, math.MaxInt64}, true, nil)
	}
	var finders []*iocKeys
	if f.ValuePrefix == "" && f.FeedID == 0 && f.Search == "" {
		if f.Tag != "" {
			finders = append(finders, tagKeys(f.Tag, f.tagKept, o.Field == IoCOrderID))
		}
		ranges, proves := s.keyRanges(f)
		for i, r := range ranges {
			k := orderKeysIn(r, walks && r.order == walkKey, proves[i])
			if r.order.field == IoCOrderScore {
				k.kept = f.scoreKept // minScore's range
			}
			if k.ordered() {
				plan.walk = k // the order's own keys, within the range
			}
			finders = append(finders, k)
		}
	}
	if plan.walk == nil && len(finders) == 0 {
		return nil, nil
	}
	stamp, stored, changed, ok, err := s.keyedStamp(ctx)
	if err != nil || !ok {
		return nil, err
	}
	plan.stamp, plan.stored, plan.changed = stamp, stored, changed
	if plan.find, err = s.pickFinder(ctx, finders, f.keysCounted); err != nil {
		return nil, err
	}
	if len(finders) == 1 && finders[0].provesAll(f) {
		plan.count = finders[0]
	}
	return plan, nil
}

// pickFinder returns the finder a page reads through, if any: of those
// with few keys (sparse), the one with the fewest; when none is sparse, one
// whose keys are in the page's order, for the page alone (the count stops
// early on iocs' own columns, most IoCs meeting the condition). counted,
// unless nil, keeps the keys it counts for the page's next plans (a page in
// type order plans each kind's walk, pageOfEachKind).
func (s *Store) pickFinder(ctx context.Context, finders []*iocKeys, counted map[string]int) (*iocKeys, error) {
	var best, ordered *iocKeys
	fewest := 0
	for _, k := range finders {
		n := int(k.kept)
		if n <= sparseKeys {
			key := fmt.Sprint(k.countSQL, k.countArgs)
			var known bool
			if n, known = counted[key]; !known {
				if err := s.reader().NewRaw(k.countSQL, append(k.countArgs, sparseKeys+1)...).Scan(ctx, &n); err != nil {
					return nil, fmt.Errorf("store: unable to count the keys of a filter: %w", err)
				}
				if counted != nil {
					counted[key] = n
				}
			}
		}
		k.keys = n
		if k.ordered() {
			ordered = k
		}
		if n <= sparseKeys && (best == nil || n < fewest) {
			best, fewest = k, n
		}
	}
	if best == nil {
		return ordered, nil
	}
	best.sparse = true
	return best, nil
}

// recentKeysMax is the least of the most IoCs changed since the key
// tables' stamp that a keyed page reads from iocs and sorts (recentKeysMost).
// Past it (after a migration, or while a long run goes on faster than the
// indexer keeps pace), the plain query costs less: at 1,000,000 IoCs
// changed, a keyed first page took 132-342 ms on SQLite and 191 ms on
// PostgreSQL, the plain one 59-108 ms.
var recentKeysMax = 50_000

// recentKeysShare is the share of the stored IoCs that may have changed
// since the key tables' stamp for a keyed page to sort them rather than
// the plain query sorting all: the plain query's cost grows with the
// table, the sort's with what changed. At 3,000,000 IoCs, 500,000 of them
// changed, the keyed SCORE page sorted them in 0.14 s, the plain one
// took 0.7 s (LAST_SEEN DESC: 0.6 s against 4 s).
var recentKeysShare int64 = 10

// recentKeysMost caps the changed IoCs a keyed page sorts among count
// stored IoCs (ioc_stats): a tenth of them, recentKeysMax at least.
func recentKeysMost(count int64) int {
	return max(recentKeysMax, int(count/recentKeysShare))
}

// changedSince counts the IoCs changed since stamp, up to limit (through
// iocs_changed_idx: a range of it, walked in its order, see keysLag).
func (s *Store) changedSince(ctx context.Context, stamp int64, limit int) (int, error) {
	var n int
	if err := s.reader().NewRaw("SELECT count(*) FROM (SELECT 1 FROM iocs WHERE changed_at > ? ORDER BY changed_at LIMIT ?) r",
		stamp, limit).Scan(ctx, &n); err != nil {
		return 0, fmt.Errorf("store: unable to count the indicators changed since their keys: %w", err)
	}
	return n, nil
}

// keyArms returns the two queries whose union is the IoCs of f: those
// changed up to stamp, found through keys that hold, and those changed
// since, from iocs alone. No IoC is in both, and each is in one as long as
// the key tables are complete up to stamp: true of any stamp they had,
// since the indexer only adds keys and the cleaner only deletes keys that
// no longer hold. So the stamp is read first, as a value the planners can
// weigh (as a subquery, PostgreSQL guessed a third of the table changed).
func (s *Store) keyArms(f IoCFilter, stamp int64, keys *iocKeys) (keyed, recent *bun.SelectQuery) {
	keyedFilter := f
	if keys.proves != nil {
		keys.proves(&keyedFilter)
	}
	keyed, _, _ = s.applyIoCFilter(keys.join(s.reader().NewSelect().Model((*IoC)(nil)), keyedFilter.Tag), keyedFilter)
	recent, _, _ = s.applyIoCFilter(s.changedIoCs(stamp), f)
	return keyed.Where("iocs.changed_at <= ?", stamp), recent
}

// changedIoCs selects the IoCs changed since stamp, through
// iocs_changed_idx: without statistics SQLite walked the whole table in id
// order rather than the few rows changed since.
func (s *Store) changedIoCs(stamp int64) *bun.SelectQuery {
	q := s.reader().NewSelect().Model((*IoC)(nil))
	if s.Dialect == SQLite {
		q = q.ModelTableExpr("iocs AS iocs INDEXED BY iocs_changed_idx")
	}
	return q.Where("iocs.changed_at > ?", stamp)
}

// keyedStamp reads the key tables' stamp for a keyed read, how many IoCs
// are stored (ioc_stats) and how many changed since the stamp; ok is false
// while more changed than such a read sorts (recentKeysMost).
func (s *Store) keyedStamp(ctx context.Context) (stamp, stored int64, changed int, ok bool, err error) {
	if stamp, err = s.keysStamp(ctx); err != nil {
		return 0, 0, 0, false, err
	}
	st, err := s.IoCStats(ctx)
	if err != nil {
		return 0, 0, 0, false, err
	}
	most := recentKeysMost(st.Count)
	recent, err := s.changedSinceAt(ctx, stamp, st.Version, most+1)
	return stamp, st.Count, recent, err == nil && recent <= most, err
}

// changedCount is a count of the IoCs changed since a stamp, up to a limit,
// as it stood at a version of the IoCs (ioc_stats).
type changedCount struct {
	stamp, version int64
	limit, n       int
}

// changedSinceAt is how many IoCs changed since stamp, up to limit, as it
// stood at a version of the IoCs (ioc_stats), read once per stamp and
// version: it moves only with a write, which moves the version. It is the
// changes the writers marked since stamp (changesSince), at least the IoCs
// changed since and at most a transaction's more while new IoCs come in,
// or, before the marks reach that far back, changedSince's count. On
// PostgreSQL the count reads the heap for each IoC changed since (their
// pages are not all-visible yet): 7-8 ms of every tag and expiry page
// with 50,000 changed at 10,000,000 IoCs, the keys' usual lag during an
// ingest, and 45-60 ms under the ingest at 1,000,000 (a batch moves the
// version every second or so, the key indexer the stamp every few). The
// version is read before the count, so a write between the two leaves a
// count too high for its version: a keyed read then falls back to a plain
// one that it could have spared, never the other way.
func (s *Store) changedSinceAt(ctx context.Context, stamp, version int64, limit int) (int, error) {
	if c := s.changedCount.Load(); c != nil && c.stamp == stamp && c.version == version && (c.n < c.limit || c.limit >= limit) {
		return min(c.n, limit), nil
	}
	n, marked, err := s.changesSince(ctx, stamp)
	if err == nil && !marked {
		n, err = s.changedSince(ctx, stamp, limit)
	}
	if err != nil {
		return 0, err
	}
	n = min(n, limit)
	s.changedCount.Store(&changedCount{stamp: stamp, version: version, limit: limit, n: n})
	return n, nil
}

// changesSince reads how many change stamps were taken since the last
// mark at or below stamp (markChangesSQL): at least the IoCs changed since
// stamp, more when some changed twice, were written in part of a
// transaction at or below stamp, or went since. marked is false when no
// mark is that old (the marks began with the migration that made them,
// and the key indexer deletes those it has passed).
func (s *Store) changesSince(ctx context.Context, stamp int64) (n int, marked bool, err error) {
	var since sql.NullInt64
	if err := s.reader().QueryRowContext(ctx, "SELECT "+changesSinceMarkSQL("?"), stamp).Scan(&since); err != nil {
		return 0, false, fmt.Errorf("store: unable to read the indicators' changes: %w", err)
	}
	return int(max(since.Int64, 0)), since.Valid, nil
}

// changesSinceMarkSQL is the expression of changesSince for the stamp
// stamp (a placeholder or a column): NULL when no mark is that old.
func changesSinceMarkSQL(stamp string) string {
	return `(SELECT changes FROM ioc_stats WHERE id = 1) -
	(SELECT m.changes FROM ioc_change_marks m WHERE m.stamp <= ` + stamp + ` ORDER BY m.stamp DESC LIMIT 1)`
}

// keysStamp reads how far the key tables are complete.
func (s *Store) keysStamp(ctx context.Context) (int64, error) {
	return s.readNumber(ctx, "SELECT stamp FROM ioc_keys_state WHERE id = 1", "the indicator keys' state")
}

// pageByKeys reads limit IoCs of f in order o after the cursor, each arm
// ordered and limited on its own, then merged: one statement, so both arms
// see the same state of the tables.
func (s *Store) pageByKeys(ctx context.Context, f IoCFilter, stamp int64, keys *iocKeys, o IoCOrder, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	keyed, recent := s.keyArms(f, stamp, keys)
	if keys.ordered() {
		keyed = orderPage(keyed, keys.col, keys.id, o, after, cursorValue, cursorID, limit)
	} else {
		keyed = orderPage(keyed, "iocs."+string(o.Field), "iocs.id", o, after, cursorValue, cursorID, limit)
	}
	// The changed-since arm sorts ids and the order's column only, then
	// reads the page's rows by id: sorted whole, the rows of 500,000 IoCs
	// changed since cost SQLite 0.76 s of CPU for a LAST_SEEN DESC page,
	// their ids and times 0.15 s.
	if o.Field == IoCOrderID {
		// In id order a keyed arm that fills the page bounds the changed
		// IoCs that may join it by its last id, which the walk of
		// iocs_changed_idx checks on each entry, not on the IoC's row: a
		// tag's first page read the rows of every IoC changed since the
		// keys (9-14 ms with 50,000 changed, the keys' usual lag during an
		// ingest at 10,000,000 IoCs, on either database).
		last, beyond := "max(id)", "<="
		var open int64 = math.MaxInt64
		if o.Desc {
			last, beyond, open = "min(id)", ">=", math.MinInt64
		}
		recent = recent.Where("iocs.id "+beyond+" (SELECT CASE WHEN count(*) < ? THEN ? ELSE "+last+" END FROM keyed)", limit, open)
	}
	recent = s.changedRows(recent, o, after, cursorValue, cursorID, limit)
	dir := "ASC"
	if o.Desc {
		dir = "DESC"
	}
	order := "id " + dir
	if o.Field != IoCOrderID {
		order = string(o.Field) + " " + dir + ", " + order
	}
	rows := []IoC{}
	err := s.keyedRead(ctx, func(db bun.IDB) error {
		return db.NewRaw("WITH keyed AS MATERIALIZED (?) SELECT * FROM keyed UNION ALL SELECT * FROM (?) AS recent ORDER BY "+order+" LIMIT ?",
			keyed, recent, limit).Scan(ctx, &rows)
	})
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	return rows, nil
}

// changedRows selects the first limit IoCs of recent (IoCs changed since
// a stamp, filtered) in order o after the cursor: their ids sorted
// (changedPage), then their rows read by id.
func (s *Store) changedRows(recent *bun.SelectQuery, o IoCOrder, after bool, cursorValue any, cursorID int64, limit int) *bun.SelectQuery {
	ids := s.changedPage(recent, o, after, cursorValue, cursorID, limit)
	rows := s.reader().NewSelect().Model((*IoC)(nil)).Where("iocs.id IN (?)", ids)
	return orderPage(rows, "iocs."+string(o.Field), "iocs.id", o, false, nil, 0, limit)
}

// changedPage selects the ids of the first limit IoCs of recent (IoCs
// changed since a stamp, filtered) in order o after the cursor. On
// PostgreSQL they are found first, through iocs_changed_idx, and sorted
// after: ordered as a whole, the planner walked the primary key from its
// start checking each IoC's stamp, expecting the changed IoCs spread
// through the table where they are the newest (2.6-4.0 s for a tag's
// first page during an ingest at 10,000,000 IoCs). A subquery with an
// OFFSET is not pulled up into the query that sorts it.
func (s *Store) changedPage(recent *bun.SelectQuery, o IoCOrder, after bool, cursorValue any, cursorID int64, limit int) *bun.SelectQuery {
	col := "iocs." + string(o.Field)
	ids := recent.ExcludeColumn("*").ColumnExpr("iocs.id")
	if s.Dialect != Postgres {
		return orderPage(ids, col, "iocs.id", o, after, cursorValue, cursorID, limit)
	}
	ids = ids.ColumnExpr(col + " AS k")
	changed := s.reader().NewSelect().TableExpr("(? OFFSET 0) AS r", ids).ColumnExpr("r.id")
	return orderPage(changed, "r.k", "r.id", o, after, cursorValue, cursorID, limit)
}

// keyedRead runs read, a query through keys, on the read pool: on
// PostgreSQL in a read-only transaction that pins its plan to what a keyed
// read is, index walks of key ranges, each key probing iocs, stopping
// with the page or the count. The planner's estimates cannot see that: it
// took a key's stamp equal to its IoC's change stamp for a coincidence
// (it guessed 19,573 of 1,000,000 keys hold), as it would a tag in the
// IoC's tags, where nearly every key holds. So it hashed both tables
// whole (530 ms for a count that stops at 10,001), mapped a whole
// key range before reading the first key (a bitmap scan, 70 ms), planned
// the walk in parallel (10-20 ms of starting workers for a walk of a
// millisecond), and, its costs inflated by the pinning, compiled the
// query (JIT, 5-100 ms).
func (s *Store) keyedRead(ctx context.Context, read func(db bun.IDB) error) error {
	if s.Dialect != Postgres {
		return read(s.reader())
	}
	return s.reader().RunInTx(ctx, &sql.TxOptions{ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, pinKeyPlans); err != nil {
			return err
		}
		return read(tx)
	})
}

// pinKeyPlans pins a PostgreSQL transaction's plans to walks of key ranges
// (and of iocs_changed_idx's) probing the other table by its key (see
// keyedRead).
const pinKeyPlans = `SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off;
SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;
SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL jit = off`

// countByKeys counts the IoCs of f up to the count cap, through keys.
func (s *Store) countByKeys(ctx context.Context, f IoCFilter, stamp int64, keys *iocKeys) (total int, capped bool, err error) {
	limit := s.countCap()
	// An order's keys past the cap that prove the whole filter (the two
	// statements are made together, orderKeysIn) may pass it without the
	// count through the rows.
	if keys.heldSQL != "" && keys.keys > limit && keys.provesAll(f) {
		past, err := s.heldKeysPast(ctx, keys, stamp, limit)
		if err != nil {
			return 0, false, err
		}
		if past {
			return limit, true, nil
		}
		// An order key holds while its IoC's column equals it, which
		// reads the IoC's row; one whose IoC has not changed since it
		// was made holds for certain, which iocs_changed_idx answers.
		// When those alone pass the cap, so does the count: minScore 90
		// at 10,000,000 IoCs on SQLite, 36-54 ms through the rows.
		var n int
		if err := s.reader().NewRaw(keys.unchangedSQL, append(keys.countArgs, stamp, limit+1)...).Scan(ctx, &n); err != nil {
			return 0, false, fmt.Errorf("store: unable to count indicators: %w", err)
		}
		if n > limit {
			return limit, true, nil
		}
	}
	keyed, recent := s.keyArms(f, stamp, keys)
	one := func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.ExcludeColumn("*").ColumnExpr("1").Limit(int64(limit) + 1)
	}
	if err := s.keyedRead(ctx, func(db bun.IDB) error {
		return db.NewRaw("SELECT (SELECT count(*) FROM (?) AS keyed) + (SELECT count(*) FROM (?) AS recent)",
			one(keyed), one(recent)).Scan(ctx, &total)
	}); err != nil {
		return 0, false, fmt.Errorf("store: unable to count indicators: %w", err)
	}
	return min(total, limit), total > limit, nil
}

// staleKeysMost is the most keys of an order's table that may no longer
// hold for heldKeysPast to count past them.
const staleKeysMost = 50_000

// heldKeysPast says whether more than limit keys of keys' range hold (each
// is an IoC of the range, counted once whether changed since stamp or
// not), from a count of the range's keys and a bound of those that do not
// hold: all the table's keys (ioc_order_key_rows) but those that certainly
// hold, one for each IoC not changed since stamp (all the IoCs, ioc_stats,
// but those changed since). It reads no IoC, where the count through
// unchangedSQL probes iocs_changed_idx once per key, 10,000 random reads
// for minScore 90 (15-30 ms at 10,000,000 IoCs with the file in memory,
// 0.36-1.0 s of a first call after a machine's start). false when it
// cannot tell: more stale keys than staleKeysMost, or a bound below zero
// (the kept counts disagree); the count through the IoCs follows.
func (s *Store) heldKeysPast(ctx context.Context, keys *iocKeys, stamp int64, limit int) (bool, error) {
	var stale sql.NullInt64
	var inRange int64
	args := append([]any{staleKeysMost, stamp, staleKeysMost + 1}, keys.countArgs...)
	if err := s.reader().QueryRowContext(ctx, keys.heldSQL, append(args, limit+1, staleKeysMost)...).Scan(&stale, &inRange); err != nil {
		return false, fmt.Errorf("store: unable to count indicators: %w", err)
	}
	if !stale.Valid || stale.Int64 < 0 || stale.Int64 > int64(staleKeysMost) {
		return false, nil
	}
	return inRange-stale.Int64 > int64(limit), nil
}
