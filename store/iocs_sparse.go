package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
)

// sparseRaceKeys is the most keys of a sparse find (sparseKeys) that a
// page reads and sorts without racing a walk of its order (pageOfSparse):
// a few milliseconds of rows.
var sparseRaceKeys = 2_000

// sparseAlone is how long pageOfSparse's first way runs alone before the
// other starts beside it.
var sparseAlone = 10 * time.Millisecond

// sparseRaceChanged is the most IoCs changed since the keys for
// pageOfSparse to race its two ways; past it, it takes the one expected to
// cost less. Right after a restart with a run's last 40,000 IoCs still to
// key, a first page of the tag of 1 % by score at 1,000,000 IoCs took
// 108 ms raced, 41 ms read alone.
var sparseRaceChanged = 10_000

// sparseWays is which of the two ways to a page of a sparse find
// pageOfSparse takes: both, but tests take one alone.
var sparseWays = struct{ walk, read bool }{walk: true, read: true}

// sparseWalked says whether a page of f through plan may walk its order
// rather than read its few keys (pageOfSparse, pageOfSparseBounded): plan
// finds its IoCs through more keys than sparseRaceKeys, not in the page's
// order, and f has no expiry range, whose pages the zones serve
// (pageOfZones, pageInExpiryZones).
func sparseWalked(f IoCFilter, plan *keyPlan) bool {
	return plan != nil && !plan.settled && plan.find != nil && plan.find.sparse && !plan.find.ordered() &&
		plan.find.keys > sparseRaceKeys && f.ExpiresBefore == nil && f.ExpiresAfter == nil
}

// racesSparse says whether a page of f through plan goes through
// pageOfSparse: on SQLite (sparseWalked).
func (s *Store) racesSparse(f IoCFilter, plan *keyPlan) bool {
	return s.Dialect == SQLite && sparseWalked(f, plan)
}

// pageOfSparse reads up to limit IoCs of f in order o after the cursor,
// which plan finds through few keys (racesSparse), two ways at once
// (race): reading every IoC of the keys and sorting them, whose cost grows
// with the keys, or the page's way as though many IoCs matched (a walk of
// the order's keys probing the tag's, each kind's values), done at the
// page's last match: soon when the matches are spread through the order,
// late when they lie together at its far end. Read and sorted, a page
// of a tag on 1 % of 3,000,000 IoCs (30,000 keys) took 101-126 ms on
// SQLite in every order but id, where a walk meets a page of it within
// some 10,000 IoCs.
//
// The way that goes first, alone for sparseAlone, is the one expected to
// cost less: the read's rows, one a key, against the walk's probes, some
// limit × stored / keys of them if the matches are spread evenly, each
// about a sixth of a row read at random (at 10,000,000 IoCs, a tag of 1 %:
// 0.6 µs a probe, 2.5 µs a row).
func (s *Store) pageOfSparse(ctx context.Context, f IoCFilter, o IoCOrder, plan *keyPlan, capped, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	walkPlan, readPlan := *plan, *plan
	walkPlan.find, readPlan.settled = nil, true
	var walked, read []IoC
	walk := func(ctx context.Context) (bool, error) {
		var err error
		walked, err = s.pageOf(ctx, f, o, &walkPlan, true, after, cursorValue, cursorID, limit)
		return true, err
	}
	readAll := func(ctx context.Context) (bool, error) {
		var err error
		read, err = s.pageOf(ctx, f, o, &readPlan, capped, after, cursorValue, cursorID, limit)
		return true, err
	}
	if !sparseWays.read {
		_, err := walk(ctx)
		return walked, err
	}
	if !sparseWays.walk {
		_, err := readAll(ctx)
		return read, err
	}
	keys := int64(plan.find.keys)
	walkFirst := int64(limit)*plan.stored < 6*keys*keys
	ways := []wayStep{readAll, walk}
	if walkFirst {
		ways[0], ways[1] = walk, readAll
	}
	if plan.changed > sparseRaceChanged {
		// Each way reads every IoC changed since the keys for the
		// condition (keyArms): side by side, the two did that twice.
		_, err := ways[0](ctx)
		if walkFirst {
			return walked, err
		}
		return read, err
	}
	way, err := s.race(ctx, sparseAlone, ways...)
	if err != nil {
		return nil, err
	}
	if (way == 0) == walkFirst {
		return walked, nil
	}
	return read, nil
}

// sparseWalkBound, when not 0, is the bound of pageOfSparseBounded's walk,
// taken whatever the keys: a variable for the tests.
var sparseWalkBound = 0

// boundsSparse says whether a page of f through plan goes through
// pageOfSparseBounded: on PostgreSQL (sparseWalked).
func (s *Store) boundsSparse(f IoCFilter, plan *keyPlan) bool {
	return s.Dialect == Postgres && sparseWalked(f, plan)
}

// pageOfSparseBounded is pageOfSparse on PostgreSQL, where a way not done
// first would run its statement to its end (race): a walk of the page's
// order within a bound (sparseWalkRows), then the read when the walk found
// no page within it. In value order each kind walks its own
// values (boundedValueWalk); in type order the page goes kind by kind
// (pageOfEachKind), each kind through the keys in id order, whose walk the
// keys bound. At 3,000,000 IoCs the tag of 1 % (30,000 keys) read and
// sorted took 72-78 ms quiet, medians of 99-108 ms during an ingest or a
// sweep.
func (s *Store) pageOfSparseBounded(ctx context.Context, f IoCFilter, o IoCOrder, plan *keyPlan, capped, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	readPlan := *plan
	readPlan.settled = true
	if o.Field == IoCOrderType && sparseWays.walk {
		return s.pageOfEachKind(ctx, f, o.Desc, after, cursorValue, cursorID, limit)
	}
	bound, spread := sparseWalkRows(limit, plan.stored, plan.find.keys)
	if sparseWalkBound > 0 {
		bound, spread = sparseWalkBound, true
	}
	if sparseWays.walk && (spread || !sparseWays.read) {
		if !sparseWays.read {
			bound = math.MaxInt32
		}
		var rows []IoC
		var ok bool
		var err error
		if o.Field == IoCOrderValue {
			rows, ok, err = s.boundedValueWalk(ctx, f, o, after, cursorValue, cursorID, limit, bound)
		} else {
			rows, _, ok, err = s.boundedWalk(ctx, f, o, after, cursorValue, cursorID, limit, bound)
		}
		if err != nil || ok {
			return rows, err
		}
	}
	return s.pageOf(ctx, f, o, &readPlan, capped, after, cursorValue, cursorID, limit)
}

// sparseWalkRows is the bound of pageOfSparseBounded's walk of a page of
// limit IoCs in its order, among stored IoCs of which keys match, and
// whether to walk at all. A page of matches spread evenly lies within
// limit × stored / keys rows of the order; the walk is taken when half as
// many again, its bound, is at most twice the keys. A walked row costs
// about half a key read (PostgreSQL at 1,000,000 IoCs, the tag of 1 %:
// 1.4 µs a row walked by score, 0.3 µs by value, 2.5 µs a key read), so a
// walk that meets no page, its matches lying together at the order's far
// end, costs at worst the read again. Bounded to half the keys, the walk
// left that tag's pages to the read (25 ms quiet, medians of 40-58 ms
// during an ingest or a sweep): spread evenly, its page lies within 10,100
// rows, and the walk took 14 ms by score, 3 ms by value. The bound is
// half the keys at least: a walk that cheap needs no closer estimate.
func sparseWalkRows(limit int, stored int64, keys int) (bound int, walk bool) {
	if keys <= 0 {
		return 0, false
	}
	spread := (int64(limit)*stored + int64(keys) - 1) / int64(keys)
	margin := spread + spread/2
	return int(min(max(margin, int64(keys/2)), 2*int64(keys))), margin <= 2*int64(keys)
}

// boundedValueWalk is boundedWalk in value order: each kind that may match
// walks its own values (the (type, value) index), within an equal share of
// bound. A kind that found fewer than limit within its share knows its
// matches up to its last walked value, its edge; the page, the first of
// the kinds' matches merged, holds when it is full and ends before every
// such edge.
func (s *Store) boundedValueWalk(ctx context.Context, f IoCFilter, o IoCOrder, after bool, cursorValue any, cursorID int64, limit, bound int) ([]IoC, bool, error) {
	kinds, err := s.kindsMatching(ctx, f)
	if err != nil || len(kinds) == 0 {
		return []IoC{}, err == nil, err
	}
	share := max(limit, bound/len(kinds))
	page := []IoC{}
	var edges []string
	for _, k := range kinds {
		kind := f
		kind.Types = []ioc.Kind{k}
		rows, edge, ok, err := s.boundedWalk(ctx, kind, o, after, cursorValue, cursorID, limit, share)
		if err != nil {
			return nil, false, err
		}
		page = append(page, rows...)
		if !ok {
			edges = append(edges, edge)
		}
	}
	sortInOrder(page, o)
	page = page[:min(len(page), limit)]
	if len(edges) > 0 && len(page) < limit {
		return nil, false, nil
	}
	for _, edge := range edges {
		// A kind's matches not walked lie past its edge (values are unique
		// within a kind).
		if last := page[len(page)-1].Value; !o.Desc && last > edge || o.Desc && last < edge {
			return nil, false, nil
		}
	}
	return page, true, nil
}

// boundedWalk reads up to limit IoCs of f in order o after the cursor among
// the first bound IoCs of that order (in value order, of f's one kind,
// whose values the (type, value) index walks). ok is false when it found
// fewer than limit among bound: past them, the page is not known; in value
// order edge is then the last value walked.
func (s *Store) boundedWalk(ctx context.Context, f IoCFilter, o IoCOrder, after bool, cursorValue any, cursorID int64, limit, bound int) (rows []IoC, edge string, ok bool, err error) {
	col := "iocs." + string(o.Field)
	walked := s.reader().NewSelect().Model((*IoC)(nil))
	last := "NULL"
	if o.Field == IoCOrderValue {
		walked = walked.Where("iocs.type = ?", string(f.Types[0]))
		from := ">="
		last = "max(walked.value)"
		if o.Desc {
			from, last = "<=", "min(walked.value)"
		}
		if after {
			// The bound on value alone is the one the index serves.
			walked = walked.Where("iocs.value "+from+" ?", cursorValue)
		}
	}
	// A subquery with a LIMIT is read as written: the order's index, in
	// its order, up to bound rows.
	walked = orderPage(walked, col, "iocs.id", o, after, cursorValue, cursorID, bound)
	rows = []IoC{}
	q, _, _ := s.applyIoCFilter(s.reader().NewSelect().Model(&rows).ModelTableExpr("(?) AS iocs", walked), f)
	if err := orderPage(q, col, "iocs.id", o, false, nil, 0, limit).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, "", false, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	if len(rows) == limit {
		return rows, "", true, nil
	}
	var n int
	var lastWalked sql.NullString
	if err := s.reader().NewSelect().TableExpr("(?) AS walked", walked.ExcludeColumn("*").ColumnExpr("iocs.value")).
		ColumnExpr("count(*), "+last).Scan(ctx, &n, &lastWalked); err != nil {
		return nil, "", false, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	return rows, lastWalked.String, n < bound, nil
}
