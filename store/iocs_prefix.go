package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
)

// prefixPaged says whether a page of f, which has a valuePrefix, in order
// o is read by pageOfPrefix rather than left to the planner: on PostgreSQL
// when few IoCs match (the count below the cap); past the cap, in every
// order on PostgreSQL (value order reads the prefix's range itself,
// before) and in id and type order on SQLite, when the prefix is the
// filter's one condition beside kinds and a tag (which no index serves):
// another condition's index may find the page for less than either of
// the two ways pageOfPrefix takes, and the planner weighs it.
//
// Left to itself the planner weighs the prefix by the statistics'
// histogram, which at 10,000,000 IoCs one ANALYZE or the next put at
// anywhere from none to 1 % of the IoCs, and takes the prefix's IoCs to be
// spread evenly over every order. Taking the 2,222 IoCs of "host-12" for
// many, it walked the primary key expecting a page of them soon and read
// 450,000 IoCs for it (0.4-0.97 s a first page, 8 ms through the prefix's
// index). A prefix that the newest IoCs share (the URLs of one host that a
// feed's run brought in) lies at one end of most orders, and a walk from
// the other end reads nearly every IoC: 45-1,049 ms with 1,100,000 such
// IoCs among 11,000,000, 1.9-2.9 s for 50,000 URLs of one host in id or
// score order among 10,000,000 (25 ms through the prefix's index).
//
// SQLite's planner, with no statistics, always reads the prefix's range
// and sorts it: 100 ms a first page of "host-1" (222,222 IoCs) newest
// first, where a walk from the newest meets a page of them within some
// 66,000 IoCs (8 ms). Past the cap, its pages in id and type order are
// read by pageOfPrefix too; its other orders walk their keys (keysFor),
// iocs having no index on them.
func (s *Store) prefixPaged(f IoCFilter, o IoCOrder, capped bool) bool {
	if f.ValuePrefix == "" {
		return false
	}
	if !capped {
		return s.Dialect == Postgres
	}
	if !prefixBesideTagAlone(f) {
		return false
	}
	return s.Dialect == Postgres || o.Field == IoCOrderID || o.Field == IoCOrderType
}

// prefixBesideTagAlone says whether f has no condition beside its prefix
// and what a prefix's range or a walk checks with it: its kinds and a tag.
func prefixBesideTagAlone(f IoCFilter) bool {
	rest := beyondPrefix(f)
	rest.Tag = ""
	return rest.empty()
}

// prefixWays is which of the two ways to a page of a prefix past the cap
// pageOfPrefix takes: both, but tests take one alone.
var prefixWays = struct{ walk, span bool }{walk: true, span: true}

// pageOfPrefix reads up to limit IoCs of f (which has a valuePrefix) in
// order o after the cursor, without assuming where in that order the
// prefix's IoCs are. When the count found no more than the cap, it reads
// them all through the prefix's range of the (type, value) index and sorts
// them. Past the cap there are two ways to the page, and which costs less
// depends on where the matches lie: walking the order's index from the
// cursor with the filter checked on each IoC (done at the page's last
// match), or reading the prefix's range of the (type, value) index and
// keeping the first in the page's order (done at the range's end). It takes
// both at once (race), in steps each twice as long as the last, and the
// first done gives the page: it costs about the cheaper way's time,
// whichever way that is, and the other way as much again, on the other
// core. (Taking the two in turns on one connection, the next step
// going to the way that had taken less time, cost the two ways' times
// added: 57-70 ms a first page of 50,000 URLs of one host among 10,000,000
// IoCs on PostgreSQL where the range alone took 25-30.)
func (s *Store) pageOfPrefix(ctx context.Context, f IoCFilter, o IoCOrder, capped bool, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	if !capped {
		// Every match, read through the prefix's index range alone (a
		// subquery with an OFFSET is not pulled up), then sorted.
		rows := []IoC{}
		matches, _, _ := s.applyIoCFilter(s.reader().NewSelect().Model((*IoC)(nil)), f)
		q := s.reader().NewSelect().Model(&rows).ModelTableExpr("(? OFFSET 0) AS iocs", matches)
		err := orderPage(q, "iocs."+string(o.Field), "iocs.id", o, after, cursorValue, cursorID, limit).Scan(ctx)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("store: unable to list indicators: %w", err)
		}
		return rows, nil
	}
	if o.Field == IoCOrderType {
		return s.pageOfPrefixByKind(ctx, f, o.Desc, after, cursorValue, cursorID, limit)
	}
	// The walk's first step is as long as the cap, and at least twice the
	// page: a short one could never fill a page. With more IoCs of the
	// prefix than the cap, most pages meet theirs within it (1.5-2 ms on
	// PostgreSQL), where the range's first step, read beside it, would
	// cost 5-8 ms more, mostly after the page was found: the walk's first
	// step goes alone (race).
	walk := &prefixWalk{after: after, key: cursorValue, id: cursorID, rows: max(s.countCap(), 2*limit)}
	if s.Dialect == Postgres {
		// There the way not done first runs its step to the end (race),
		// and a walk's step reads each IoC's row: its steps stop growing
		// at twice the first, so that what a page leaves running behind
		// it is bounded. Growing on, the walk's step left over from the
		// prefix of 22,222 IoCs around ids 1.2-1.3 M, in id order desc at
		// 10,000,000 IoCs, read 40,000-160,000 rows after the range had
		// found the page, and the next pages waited on it: p90 81-104 ms
		// of back-to-back pages, 41-51 ms capped (medians 30-36, 27-30).
		walk.most = 2 * walk.rows
	}
	return s.raceRange(ctx, f, o, after, cursorValue, cursorID, limit, 0,
		func(ctx context.Context) (bool, error) { return s.stepPrefixWalk(ctx, f, o, limit, walk) },
		func(ctx context.Context) ([]IoC, error) { return s.iocsOfPrefix(ctx, f, o, walk.found, limit) })
}

// raceRange takes walk, a way to a page of f's prefix past the cap in
// order o (walked gives its page once done), and the prefix's range at
// once (race, walk alone first: for its first step, or for alone when
// that is not 0), and returns the page of the first done. A range of no
// more than prefixHandOff entries, which a count through the index tells
// first (the page's count of its total, when the prefix and its kinds are
// all of f: IoCs counts on to prefixHandOff), is read alone instead, each
// kind in one statement: on two cores beside an ingest the two ways at
// once shared the core it left, and the walk, even handing off to the
// range once the count had come back beside it, took a core for its first
// step. On SQLite at 10,000,000 IoCs,
// pages of "host-12" (22,222 IoCs) by first sighting and by score, called
// back to back during an ingest, had medians of 30.8-33.4 / 27.6-28.0 ms
// racing, 23.4-24.0 / 19.1-19.4 with the walk handing off, and 10.4-12.3
// / 7.0-9.4 with the range alone from the start (docs/benchmarks.md). A
// page the walk would have found at once waits for the count: it stops
// past prefixHandOff entries, 1-2 ms.
func (s *Store) raceRange(ctx context.Context, f IoCFilter, o IoCOrder, after bool, cursorValue any, cursorID int64, limit int,
	alone time.Duration, walk wayStep, walked func(context.Context) ([]IoC, error)) ([]IoC, error) {
	span := &prefixRange{rows: s.countCap()}
	if prefixHandOff >= 0 && prefixWays.walk && prefixWays.span {
		small := f.prefixCounted && f.prefixEntries <= prefixHandOff
		if !f.prefixCounted {
			var err error
			if small, err = s.prefixRangeAtMost(ctx, f, prefixHandOff); err != nil {
				return nil, err
			}
		}
		if small {
			span.whole = true
			for {
				done, err := s.stepPrefixRange(ctx, f, o, after, cursorValue, cursorID, limit, span)
				if err != nil {
					return nil, err
				}
				if done {
					return s.iocsOfPrefix(ctx, f, o, span.first, limit)
				}
			}
		}
	}
	var ways []wayStep
	var answers []func(context.Context) ([]IoC, error)
	if prefixWays.walk {
		ways, answers = append(ways, walk), append(answers, walked)
	}
	if prefixWays.span {
		ways = append(ways, func(ctx context.Context) (bool, error) {
			return s.stepPrefixRange(ctx, f, o, after, cursorValue, cursorID, limit, span)
		})
		answers = append(answers, func(ctx context.Context) ([]IoC, error) { return s.iocsOfPrefix(ctx, f, o, span.first, limit) })
	}
	way, err := s.race(ctx, alone, ways...)
	if err != nil {
		return nil, err
	}
	return answers[way](ctx)
}

// prefixHandOff is the most entries of a prefix's range that raceRange
// reads alone rather than race the walk: some 7 ms on SQLite, 10 on
// PostgreSQL, at 10,000,000 IoCs. A variable for the tests (-1: the walk
// always races the range).
var prefixHandOff = 30_000

// rangeCountedOn says whether the count of a page of f's total counts on
// to prefixHandOff, for raceRange: f has a prefix and no condition beyond
// its kinds, and the page, of first IoCs, goes through raceRange when more
// match than the cap. That is every order on PostgreSQL but by value (the
// prefix's range in the index's own order) and by kind (each kind's count
// of its own); on SQLite, id order, and the others while their keys serve
// them. While the keys lag, such a count goes past the cap for nothing: at
// most 20,000 more entries of the index.
func (s *Store) rangeCountedOn(f IoCFilter, o IoCOrder, first int) bool {
	return first > 0 && f.ValuePrefix != "" && beyondPrefix(f).empty() && prefixHandOff > s.countCap() &&
		o.Field != IoCOrderValue && o.Field != IoCOrderType
}

// prefixRangeAtMost says whether f's prefix's range, in f's kinds, has no
// more than n entries: a count of the range through the (type, value)
// index alone, which stops past n.
func (s *Store) prefixRangeAtMost(ctx context.Context, f IoCFilter, n int) (bool, error) {
	entries := s.prefixEntries(f.ValuePrefix, f.Types, "1")
	var count int
	if err := s.reader().NewSelect().TableExpr("(?) AS entries", entries.Limit(int64(n)+1)).ColumnExpr("count(*)").Scan(ctx, &count); err != nil {
		return false, fmt.Errorf("store: unable to count indicators: %w", err)
	}
	return count <= n, nil
}

// keysRaceRange says whether a page of f, which pageOf would read by
// walking keys (the order's keys, plan's walk), on SQLite, races that walk
// against the prefix's range (pageOfPrefixByKeys): f has a prefix, more
// IoCs match than the cap, and nothing beside the prefix, its kinds and a
// tag (prefixPaged's filters).
func (s *Store) keysRaceRange(f IoCFilter, capped bool, plan *keyPlan, keys *iocKeys) bool {
	return s.Dialect == SQLite && f.ValuePrefix != "" && capped && keys != nil && keys == plan.walk && prefixBesideTagAlone(f)
}

// pageOfPrefixByKeys reads up to limit IoCs of f (keysRaceRange) in order
// o after the cursor on SQLite: the walk of the order's keys, one
// statement, alone for its first prefixKeysAlone, against the prefix's
// range. The walk meets a page soon when the prefix's IoCs are spread over
// the order, and after nearly every key when they lie at its far end: the
// 22,222 IoCs of "host-12", all older than the 8,700,000 newest of
// 10,000,000, took 2.6 s a first page by first sighting, last sighting or
// expiry, newest first, where the whole of their range, read with the
// order's column, took 7-20 ms.
func (s *Store) pageOfPrefixByKeys(ctx context.Context, f IoCFilter, o IoCOrder, plan *keyPlan, keys *iocKeys, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	var rows []IoC
	return s.raceRange(ctx, f, o, after, cursorValue, cursorID, limit, prefixKeysAlone,
		func(ctx context.Context) (bool, error) {
			var err error
			rows, err = s.pageByKeys(ctx, f, plan.stamp, keys, o, after, cursorValue, cursorID, limit)
			return true, err
		},
		func(context.Context) ([]IoC, error) { return rows, nil })
}

// prefixKeysAlone is how long pageOfPrefixByKeys' walk of the keys runs
// alone before the prefix's range starts beside it: a walk that meets its
// page soon is done sooner.
var prefixKeysAlone = 2 * time.Millisecond

// pageOfPrefixByKind reads up to limit IoCs of f's prefix, past the cap,
// in type order after the cursor: kind after kind, each in id order
// through pageOfPrefix's two ways, since no index has (type, id). Left to
// the planner, such a page read the prefix's range and sorted it: at
// 10,000,000 IoCs 71-79 ms for "host-1" (222,222 domains) and 106-130 ms
// for "http://site-1" on PostgreSQL, 58-169 ms for either on SQLite.
func (s *Store) pageOfPrefixByKind(ctx context.Context, f IoCFilter, desc, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	cursorKind, _ := cursorValue.(string)
	out := []IoC{}
	for _, k := range kindsFrom(f.Types, desc, after, cursorKind) {
		if len(out) == limit {
			break
		}
		kind := f
		kind.Types = []ioc.Kind{ioc.Kind(k)}
		kind.prefixCounted = false // f's count was of all its kinds
		// A kind with none of the prefix's values costs a probe of the
		// index, not a first step of each way.
		first, err := s.firstPrefixKind(ctx, f.ValuePrefix, kind.Types)
		if err != nil {
			return nil, err
		}
		if first == "" {
			continue
		}
		rows, err := s.pageOfPrefix(ctx, kind, IoCOrder{Field: IoCOrderID, Desc: desc}, true, after && k == cursorKind, nil, cursorID, limit-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// beyondPrefix is f without the conditions a prefix's range proves (its
// prefix and kinds): what is checked on the IoCs the range finds.
func beyondPrefix(f IoCFilter) IoCFilter {
	f.ValuePrefix, f.Types = "", nil
	return f
}

// prefixWalk is how far pageOfPrefix has walked the page's order.
type prefixWalk struct {
	// after says the walk goes on after the IoC at (key, id) in the page's
	// order; key is the order's column, unused in id order.
	after bool
	key   any
	id    int64
	// rows is how many IoCs the next step walks: twice the last step's,
	// up to most unless most is 0.
	rows, most int
	// ended says the last step's window is behind the walk, its last IoC
	// still to be found: the next step, if any, starts there (a walk the
	// range beats after its first step takes no next step, and on
	// PostgreSQL the last of a window of 10,000 by first sighting cost
	// 5.9 ms).
	ended bool
	// found is the matches met so far, in the page's order.
	found []prefixMatch
}

// stepPrefixWalk walks w.rows more IoCs in order o, keeping the matches of
// f, up to limit, from where the last step's window ended; done says the
// page is full or the walk met the last IoC.
func (s *Store) stepPrefixWalk(ctx context.Context, f IoCFilter, o IoCOrder, limit int, w *prefixWalk) (done bool, err error) {
	col := "iocs." + string(o.Field)
	window := func(q *bun.SelectQuery, rows int) *bun.SelectQuery {
		return orderPage(q, col, "iocs.id", o, w.after, w.key, w.id, rows)
	}
	if w.ended {
		// The last window's last IoC, read through the order's index
		// alone: this window starts after it. None: the walk met the
		// last IoC.
		var key, id int64
		last := window(s.reader().NewSelect().Model((*IoC)(nil)).ExcludeColumn("*").ColumnExpr(col+", iocs.id"), 1).Offset(int64(w.rows - 1))
		if err := last.Scan(ctx, &key, &id); errors.Is(err, sql.ErrNoRows) {
			return true, nil
		} else if err != nil {
			return false, fmt.Errorf("store: unable to list indicators: %w", err)
		}
		w.after, w.key, w.id, w.ended = true, key, id, false
		w.rows *= 2
		if w.most > 0 {
			w.rows = min(w.rows, w.most)
		}
	}
	var found []prefixMatch
	walked := window(s.reader().NewSelect().Model((*IoC)(nil)).ExcludeColumn("*").ColumnExpr(stepColumns(f, o)), w.rows)
	q, _, _ := s.applyIoCFilter(s.reader().NewSelect().TableExpr("(?) AS iocs", walked).ColumnExpr(prefixMatchColumns(o)), f)
	// The window comes in the page's order: the page stops at its limit
	// without a sort.
	if err := orderPage(q, col, "iocs.id", o, false, nil, 0, limit-len(w.found)).Scan(ctx, &found); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	w.found = append(w.found, found...)
	if len(w.found) == limit {
		return true, nil
	}
	w.ended = true
	return false, nil
}

// prefixRange is how far pageOfPrefix has read the prefix's range of the
// (type, value) index: kind after kind, in the index's order.
type prefixRange struct {
	// kind is the kind being read ("" before the first step), after value
	// when started.
	kind    string
	started bool
	value   string
	// rows is how many entries the next step reads, unless whole: each
	// step reads the rest of its kind, the range being known to be small
	// and read alone (prefixHandOff). In steps of 10,000, the 22,222
	// entries of "host-12" took two statements of 3.2 and 4.3 ms on SQLite
	// at 10,000,000 IoCs, where one reading them all took 6.2-6.6 ms.
	rows  int
	whole bool
	// first is the first matches read so far in the page's order, after
	// the page's cursor.
	first []prefixMatch
}

// prefixMatch is a match of a prefix that pageOfPrefix met: its id and its
// key in the page's order (the id again in id order). The page's rows are
// read by id once it is found.
type prefixMatch struct {
	ID  int64 `bun:"id"`
	Key int64 `bun:"key"`
}

// prefixMatchColumns selects a prefixMatch in order o.
func prefixMatchColumns(o IoCOrder) string {
	return "iocs.id, iocs." + string(o.Field) + " AS key"
}

// stepColumns is the columns of iocs that the steps of a way to a page
// (pageOfPrefix's, pageOfZones') read to check f (a prefix, kinds, a tag,
// an expiry range, a minimum score) and order by o: not the whole row,
// which PostgreSQL took apart for every IoC walked (a walk of 80,000 IoCs
// 14.9 ms, 11.3 with these; a range step of 40,000 12.2 ms, 11.0).
func stepColumns(f IoCFilter, o IoCOrder) string {
	cols := []string{"id", "type", "value"}
	add := func(col string, needed bool) {
		if needed && !slices.Contains(cols, col) {
			cols = append(cols, col)
		}
	}
	add("tags", f.Tag != "")
	add("expires_at", f.ExpiresBefore != nil || f.ExpiresAfter != nil)
	add("score", f.MinScore != nil)
	add(string(o.Field), true)
	return "iocs." + strings.Join(cols, ", iocs.")
}

// kindsAfter is f's kinds (every kind when f names none) that sort after
// kind (all of them after ""); kinds sort the same in byte order and in
// any collation's.
func kindsAfter(f IoCFilter, kind string) []ioc.Kind {
	kinds := f.Types
	if len(kinds) == 0 {
		kinds = ioc.Kinds
	}
	var later []ioc.Kind
	for _, k := range kinds {
		if string(k) > kind {
			later = append(later, k)
		}
	}
	return later
}

// prefixEntries selects cols of the entries of prefix's range in kinds
// (every kind when none), and nothing else of a filter.
func (s *Store) prefixEntries(prefix string, kinds []ioc.Kind, cols string) *bun.SelectQuery {
	q, _, _ := s.applyIoCFilter(s.reader().NewSelect().Model((*IoC)(nil)).ExcludeColumn("*").ColumnExpr(cols),
		IoCFilter{Types: kinds, ValuePrefix: prefix})
	return q
}

// firstPrefixKind is the first of kinds, in the index's order, with an
// entry in prefix's range; "" when none has. The order leads the planner
// to the prefix's range of the (type, value) index whatever its statistics
// say of the prefix, given the LIMIT: a walk of the index that stops at
// once costs less than a scan of the table and a sort.
func (s *Store) firstPrefixKind(ctx context.Context, prefix string, kinds []ioc.Kind) (string, error) {
	q := s.prefixEntries(prefix, kinds, "iocs.type")
	var first []string
	if err := q.OrderExpr("iocs.type, iocs.value").Limit(1).Scan(ctx, &first); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("store: unable to list indicators: %w", err)
	}
	if len(first) == 0 {
		return "", nil
	}
	return first[0], nil
}

// stepPrefixRange reads up to r.rows more entries of f's prefix range,
// within one kind, keeping the first limit of f's matches in order o
// after the page's cursor; done says the range has been read to its end.
// A kind's end ends a step, and the next starts at the next kind with an
// entry (nextPrefixKind), so that each step reads one range of the index.
func (s *Store) stepPrefixRange(ctx context.Context, f IoCFilter, o IoCOrder, after bool, cursorValue any, cursorID int64, limit int, r *prefixRange) (done bool, err error) {
	if r.kind == "" {
		if done, err := s.nextPrefixKind(ctx, f, r); done || err != nil {
			return done, err
		}
	}
	full, err := s.readPrefixSpan(ctx, f, o, after, cursorValue, cursorID, limit, r)
	if err != nil {
		return false, err
	}
	if full {
		r.started = true
		r.rows *= 2
		return false, nil
	}
	return s.nextPrefixKind(ctx, f, r)
}

// nextPrefixKind moves r to the start of the first of f's kinds after r's
// (all of them before the first step) with an entry in f's prefix's range;
// done says none has. A probe of the index skips the kinds with none, but
// one kind left is taken as it is: its step finds it empty as cheaply, and
// pageOfPrefixByKind has probed its kind already.
func (s *Store) nextPrefixKind(ctx context.Context, f IoCFilter, r *prefixRange) (done bool, err error) {
	later := kindsAfter(f, r.kind)
	var next string
	switch len(later) {
	case 0:
		return true, nil
	case 1:
		next = string(later[0])
	default:
		if next, err = s.firstPrefixKind(ctx, f.ValuePrefix, later); err != nil {
			return false, err
		}
	}
	r.kind, r.started = next, false
	return next == "", nil
}

// readPrefixSpan reads the span of r.rows entries of f's prefix range in
// r's kind (the rest of the kind when r.whole), after r's position,
// keeping the first limit of f's matches among them in order o after the
// page's cursor; full says the kind had that many, and r's position moves
// to the span's last entry.
//
// One statement (one snapshot, so that no entry falls between two reads
// of a moving range) finds the span's last entry through the index alone,
// then reads the matches between the position and that entry: a range of
// the index with two bounds, read in whatever way the planner likes best,
// since only the matches' order matters. A span read in the index's order
// and materialized, for its matches and for its last entry (and count)
// both, took 13-15 ms for 10,000 entries at 10,000,000 IoCs on
// PostgreSQL, where this takes 3-4 ms; reading 22,222 entries to the
// range's end, the planner sorted them by value for the span's LIMIT (a
// bitmap scan): 23-57 ms.
func (s *Store) readPrefixSpan(ctx context.Context, f IoCFilter, o IoCOrder, after bool, cursorValue any, cursorID int64, limit int, r *prefixRange) (full bool, err error) {
	// One bound each way: SQLite bounds its walk of an index by one
	// condition on each side, and given two took the prefix's own (each
	// step of "host-1", 222,222 domains, read from its position to the
	// prefix's end: 84 ms for a step of 10,000).
	end := prefixEnd(f.ValuePrefix)
	inSpan := func(cols string) *bun.SelectQuery {
		q := s.reader().NewSelect().Model((*IoC)(nil)).ExcludeColumn("*").ColumnExpr(cols).Where("iocs.type = ?", r.kind)
		if r.started {
			return q.Where("iocs.value > ?", r.value)
		}
		return q.Where("iocs.value >= ?", f.ValuePrefix)
	}
	read, span := s.reader().NewSelect(), inSpan(stepColumns(f, o))
	lastValue := "NULL"
	if r.whole {
		// The rest of the kind, up to the prefix's end.
		span = span.Where("iocs.value < ?", end)
	} else {
		last := inSpan("iocs.value").Where("iocs.value < ?", end).OrderExpr("iocs.type, iocs.value").Limit(1).Offset(int64(r.rows - 1))
		read = read.WithQuery(bun.NewWithQuery("last", last).Materialized())
		// With fewer entries than the span's, the prefix's end ends the
		// span (a value equal to end is left out after).
		span = span.Where("iocs.value <= COALESCE((SELECT last.value FROM last), ?)", end)
		lastValue = "(SELECT last.value FROM last)"
	}
	// OFFSET 0 keeps the planner from walking another order's index for
	// the page's few matches, the range's IoCs taken to be spread evenly
	// over it (prefixPaged).
	apart := "(? OFFSET 0) AS iocs"
	if s.Dialect == SQLite {
		apart = "(? LIMIT -1 OFFSET 0) AS iocs"
	}
	matches, _, _ := s.applyIoCFilter(s.reader().NewSelect().TableExpr(apart, span).ColumnExpr(prefixMatchColumns(o)).Where("iocs.value < ?", end), beyondPrefix(f))
	matches = orderPage(matches, "iocs."+string(o.Field), "iocs.id", o, after, cursorValue, cursorID, limit)
	rows, err := read.TableExpr("(SELECT 1) AS one").Join("LEFT JOIN (?) AS iocs ON 1 = 1", matches).
		ColumnExpr("iocs.id, iocs.key, " + lastValue + " AS last_value").Rows(ctx)
	if err != nil {
		return false, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	defer rows.Close()
	var first []prefixMatch
	var spanEnd sql.NullString
	for rows.Next() {
		var id, key sql.NullInt64
		if err := rows.Scan(&id, &key, &spanEnd); err != nil {
			return false, fmt.Errorf("store: unable to list indicators: %w", err)
		}
		if id.Valid {
			first = append(first, prefixMatch{ID: id.Int64, Key: key.Int64})
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	r.first = firstMatches(r.first, first, o.Desc, limit)
	if spanEnd.Valid {
		r.value = spanEnd.String
	}
	return spanEnd.Valid, nil
}

// iocsOfPrefix reads the IoCs of matches in order o, by id alone: the
// matches were checked on their kinds and values, which do not change, and
// f's tag is checked again. With the prefix's condition among its
// conditions, the planner read the prefix's range for them (its histogram
// put few IoCs there): 10-15 ms for 101 of 50,000 URLs of one host. On
// PostgreSQL the ids are read in a subquery the planner keeps apart
// (OFFSET 0), so that the other conditions are checked on those rows
// only: during an ingest of 500,000 short-lived IoCs at 1,000,000, the
// statistics still put none within expiresBefore +1d, and the planner
// walked that range of iocs_expires_idx for the ids, 100,000-300,000
// entries each time (45-170 ms).
func (s *Store) iocsOfPrefix(ctx context.Context, f IoCFilter, o IoCOrder, matches []prefixMatch, limit int) ([]IoC, error) {
	rows := []IoC{}
	if len(matches) == 0 {
		return rows, nil
	}
	ids := make([]int64, len(matches))
	for i, m := range matches {
		ids[i] = m.ID
	}
	byID := s.reader().NewSelect().Model(&rows)
	if s.Dialect == Postgres {
		byID = byID.ModelTableExpr("(SELECT * FROM iocs WHERE iocs.id IN (?) OFFSET 0) AS iocs", bun.In(ids))
	} else {
		byID = byID.Where("iocs.id IN (?)", bun.In(ids))
	}
	q, _, _ := s.applyIoCFilter(byID, beyondPrefix(f))
	if err := orderPage(q, "iocs."+string(o.Field), "iocs.id", o, false, nil, 0, limit).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	return rows, nil
}
