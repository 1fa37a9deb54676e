package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/uptrace/bun"

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

// sparseWalkBudget, when not 0, is the most rows pageOfSparseBounded's
// walks read together, the walk taken whatever the keys: a variable for
// the tests.
var sparseWalkBudget = 0

// sparseWalkSteps is the most walk statements pageOfSparseBounded makes
// before it reads the keys instead.
const sparseWalkSteps = 8

// boundsSparse says whether a page of f through plan goes through
// pageOfSparseBounded: on PostgreSQL (sparseWalked).
func (s *Store) boundsSparse(f IoCFilter, plan *keyPlan) bool {
	return s.Dialect == Postgres && sparseWalked(f, plan)
}

// pageOfSparseBounded is pageOfSparse on PostgreSQL, where a way not done
// first would run its statement to its end (race): walks of the page's
// order in steps, within a budget of rows (sparseWalkRows, walkSparse),
// then the read of the keys when the walks found no page within it. In
// type order the page goes kind by kind (pageOfEachKind), each kind
// through the keys in id order, whose walk the keys bound. At 3,000,000
// IoCs the tag of 1 % (30,000 keys) read and sorted took 72-78 ms quiet,
// medians of 99-108 ms during an ingest or a sweep.
func (s *Store) pageOfSparseBounded(ctx context.Context, f IoCFilter, o IoCOrder, plan *keyPlan, capped, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	readPlan := *plan
	readPlan.settled = true
	if o.Field == IoCOrderType && sparseWays.walk {
		return s.pageOfEachKind(ctx, f, o.Desc, after, cursorValue, cursorID, limit)
	}
	budget, walk := sparseWalkRows(limit, plan.stored, plan.find.keys)
	if sparseWalkBudget > 0 {
		budget, walk = sparseWalkBudget, true
	}
	if !sparseWays.read {
		budget, walk = math.MaxInt32, true
	}
	if sparseWays.walk && walk {
		rate := float64(plan.find.keys) / float64(max(plan.stored, int64(plan.find.keys), 1))
		rows, ok, err := s.walkSparse(ctx, f, o, rate, after, cursorValue, cursorID, limit, budget)
		if err != nil || ok {
			return rows, err
		}
	}
	return s.pageOf(ctx, f, o, &readPlan, capped, after, cursorValue, cursorID, limit)
}

// sparseWalkRows is the most rows pageOfSparseBounded's walks of a page of
// limit IoCs in its order read together, among stored IoCs of which keys
// match, and whether to walk at all. A page of matches spread evenly lies
// within limit × stored / keys rows of the order; the walks are taken when
// half as many again is within their budget, twice the keys. A walked row
// costs a quarter to a half of a key read (PostgreSQL at 1,000,000 IoCs:
// 0.5-1 µs a row walked, 2.4 µs a key read), so walks that meet no page
// cost at worst half the read again, and most give up far sooner
// (walkSparse). Within half the keys, the tag of 1 %'s pages at 1,000,000
// IoCs were left to the read (25 ms quiet, medians of 40-58 ms during an
// ingest or a sweep): spread evenly, its page lies within 10,100 rows,
// which the walks meet in 12 ms by score, 3 ms by value.
func sparseWalkRows(limit int, stored int64, keys int) (budget int, walk bool) {
	if keys <= 0 {
		return 0, false
	}
	spread := (int64(limit)*stored + int64(keys) - 1) / int64(keys)
	return 2 * keys, spread+spread/2 <= 2*int64(keys)
}

// sparseWalker is one of walkSparse's walks: the IoCs of its filter (in
// value order, those of one kind) in the page's order after the cursor,
// read in steps.
type sparseWalker struct {
	f IoCFilter
	// rate is how many matches a walked row is expected to hold: the kept
	// counts' at first, then those the walk met.
	rate float64
	// rows are the matches met, in the page's order.
	rows   []IoC
	walked int
	// at is where the walk goes on: after the last row it walked, or,
	// before its first step, at its first IoC after the cursor (in value
	// order; unknown otherwise).
	at      walkEdge
	started bool
	// done says the walk met every match that may be on the page: a page
	// of its own, or the order's end.
	done bool
}

// walkEdge is a place in an order: the order's column (a string in value
// order, an integer otherwise) and the IoC's id.
type walkEdge struct {
	key any
	id  int64
	set bool
}

// walkSparse reads up to limit IoCs of f in order o after the cursor by
// walks of the order (sparseWalkers), within budget rows in all; ok is
// false when they found no page within it. Each step walks the open
// walker that lies furthest behind in the order, for rows enough to meet
// the rest of the page at its rate, half as much again: the kept counts'
// rate at first, within a quarter of the budget, then the rate the walk
// met, within the budget left. A walk whose matches lie together at the
// order's far end is given up after its first step, which met none, or
// too few for the rest to lie within the budget. The page, the first
// limit of the walkers' matches, holds once it is full and ends before
// every open walker's place, or every walker is done. At most
// sparseWalkSteps steps; walked alone (the tests' way, budget
// math.MaxInt32), each walker in one step.
func (s *Store) walkSparse(ctx context.Context, f IoCFilter, o IoCOrder, rate float64, after bool, cursorValue any, cursorID int64, limit, budget int) ([]IoC, bool, error) {
	walkers, err := s.sparseWalkers(ctx, f, o, rate, after, cursorValue, cursorID)
	if err != nil {
		return nil, false, err
	}
	alone := budget == math.MaxInt32
	stepMost := max(budget/4, 1)
	walked := 0
	for step := 0; ; step++ {
		page, next := sparsePage(walkers, o, limit)
		if next == nil {
			return page, true, nil
		}
		if !alone && (step == sparseWalkSteps || walked >= budget) {
			return nil, false, nil
		}
		quota := limit - len(next.rows)
		most := stepMost
		if next.walked > 0 {
			// At the rate it met, the walk goes on if its share of the
			// page lies within the budget left.
			if float64(quota)/next.rate > float64(budget-walked) {
				return nil, false, nil
			}
			most = budget - walked
		}
		rows := most
		if next.rate > 0 {
			rows = int(min(math.Ceil(float64(quota)*1.5/next.rate), float64(most)))
		}
		rows = max(min(rows, budget-walked), 1)
		if alone {
			// Walked alone, in one step to the page or the order's end.
			rows = math.MaxInt32
		}
		from, fromValue, fromID := after, cursorValue, cursorID
		if next.started {
			from, fromValue, fromID = true, next.at.key, next.at.id
		}
		met, end, err := s.boundedWalk(ctx, next.f, o, from, fromValue, fromID, quota, rows)
		if err != nil {
			return nil, false, err
		}
		if len(met) == 0 && end.set {
			// Its matches lie further on than a step expected: together,
			// at the order's far end, which the read reaches at once.
			return nil, false, nil
		}
		next.rows = append(next.rows, met...)
		next.started = true
		walked += rows
		next.walked += rows
		if next.done = len(met) == quota || !end.set; next.done {
			continue
		}
		next.at = end
		next.rate = float64(len(next.rows)) / float64(next.walked)
	}
}

// sparseWalkers returns walkSparse's walks of f in order o after the
// cursor: in value order, one for each kind whose kept counts say some
// IoCs may match (the (type, value) index walks one kind's values), each
// placed at its first IoC after the cursor, so that a kind whose values
// all lie past the page is never walked; otherwise one, of rate.
func (s *Store) sparseWalkers(ctx context.Context, f IoCFilter, o IoCOrder, rate float64, after bool, cursorValue any, cursorID int64) ([]*sparseWalker, error) {
	if o.Field != IoCOrderValue {
		return []*sparseWalker{{f: f, rate: rate}}, nil
	}
	kept, _, err := s.keptKinds(ctx, f)
	if err != nil {
		return nil, err
	}
	var walkers []*sparseWalker
	for kind, c := range kept {
		if c.matches <= 0 {
			continue
		}
		w := &sparseWalker{f: f, rate: float64(c.matches) / float64(max(c.all, 1))}
		w.f.Types = []ioc.Kind{ioc.Kind(kind)}
		var first []IoC
		q := s.reader().NewSelect().Model(&first).Column("id", "value").Where("iocs.type = ?", kind)
		if err := orderPage(q, "iocs.value", "iocs.id", o, after, cursorValue, cursorID, 1).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("store: unable to list indicators: %w", err)
		}
		if len(first) == 0 {
			continue
		}
		w.at = walkEdge{key: first[0].Value, id: first[0].ID, set: true}
		walkers = append(walkers, w)
	}
	return walkers, nil
}

// sparsePage returns the page of walkers' matches, the first limit of
// them in order o, when it holds, or else the open walker that lies
// furthest behind, which is to walk on.
func sparsePage(walkers []*sparseWalker, o IoCOrder, limit int) ([]IoC, *sparseWalker) {
	var next *sparseWalker
	for _, w := range walkers {
		if !w.done && (next == nil || !w.at.set || next.at.set && compareEdges(o, w.at, next.at) < 0) {
			next = w
		}
	}
	page := []IoC{}
	for _, w := range walkers {
		page = append(page, w.rows...)
	}
	sortInOrder(page, o)
	page = page[:min(len(page), limit)]
	if next == nil {
		return page, nil
	}
	if len(page) < limit || !next.at.set {
		return nil, next
	}
	last := &page[len(page)-1]
	// Matches not met lie after a walked place (the page's last row when
	// it is the walker's own), or from a kind's first IoC on.
	if compareEdges(o, walkEdge{key: orderKeyOfRow(last, o.Field), id: last.ID, set: true}, next.at) <= 0 {
		return page, nil
	}
	return nil, next
}

// orderKeyOfRow is r's column of an order other than type and id, as a
// walk's place holds it (walkEdge).
func orderKeyOfRow(r *IoC, field IoCOrderField) any {
	switch field {
	case IoCOrderValue:
		return r.Value
	case IoCOrderScore:
		return int64(r.Score)
	case IoCOrderFirstSeen:
		return micros(r.FirstSeen)
	case IoCOrderLastSeen:
		return micros(r.LastSeen)
	case IoCOrderExpiresAt:
		return micros(r.ExpiresAt)
	}
	return nil
}

// compareEdges compares two places in order o, descending when o is.
func compareEdges(o IoCOrder, a, b walkEdge) int {
	var c int
	if as, ok := a.key.(string); ok {
		c = cmp.Compare(as, b.key.(string))
	} else {
		c = cmp.Compare(a.key.(int64), b.key.(int64))
	}
	c = cmp.Or(c, cmp.Compare(a.id, b.id))
	if o.Desc {
		return -c
	}
	return c
}

// boundedWalk reads up to limit IoCs of f in order o after the cursor among
// the first bound IoCs of that order (in value order, of f's one kind,
// whose values the (type, value) index walks). When it found fewer than
// limit, end is the bound-th IoC of the order, the last it walked, past
// which the matches are not known; unset when the walk met the order's
// end first.
func (s *Store) boundedWalk(ctx context.Context, f IoCFilter, o IoCOrder, after bool, cursorValue any, cursorID int64, limit, bound int) (rows []IoC, end walkEdge, err error) {
	col := "iocs." + string(o.Field)
	inOrder := func() *bun.SelectQuery {
		q := s.reader().NewSelect().Model((*IoC)(nil))
		if o.Field != IoCOrderValue {
			return orderPage(q, col, "iocs.id", o, after, cursorValue, cursorID, bound)
		}
		dir, from := "ASC", ">="
		if o.Desc {
			dir, from = "DESC", "<="
		}
		q = q.Where("iocs.type = ?", string(f.Types[0]))
		if after {
			// The bound on value alone is the one the index serves.
			q = afterCursor(q.Where("iocs.value "+from+" ?", cursorValue), col, "iocs.id", o, cursorValue, cursorID)
		}
		// A kind's values are unique: in the index's own order, without
		// the id, the walk needs no sort.
		return q.OrderExpr("iocs.value " + dir).Limit(int64(bound))
	}
	// A subquery with a LIMIT is read as written: the order's index, in
	// its order, up to bound rows.
	rows = []IoC{}
	page, _, _ := s.applyIoCFilter(s.reader().NewSelect().Model(&rows).ModelTableExpr("(?) AS iocs", inOrder()), f)
	if err := orderPage(page, col, "iocs.id", o, false, nil, 0, limit).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, walkEdge{}, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	if len(rows) == limit || bound == math.MaxInt32 {
		return rows, walkEdge{}, nil
	}
	// The bound-th IoC, read from the index alone (0.7-1.4 ms for some
	// 8,000 entries at 1,000,000 IoCs, where a count of the walked rows
	// with the last of them took 3-12).
	var value sql.NullString
	var key, id sql.NullInt64
	into := any(&key)
	if o.Field == IoCOrderValue {
		into = &value
	}
	err = s.reader().NewSelect().TableExpr("(?) AS walked", inOrder().ExcludeColumn("*").ColumnExpr(col+" AS k, iocs.id").Offset(int64(bound-1)).Limit(1)).
		ColumnExpr("walked.k, walked.id").Scan(ctx, into, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return rows, walkEdge{}, nil
	}
	if err != nil {
		return nil, walkEdge{}, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	end = walkEdge{key: key.Int64, id: id.Int64, set: true}
	if o.Field == IoCOrderValue {
		end.key = value.String
	}
	return rows, end, nil
}
