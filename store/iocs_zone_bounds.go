package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// zonesServe says whether a page of f in order o, with keys the keys
// pageOf would walk (nil for none), races pageOfZones' read of the expiry
// zones against that walk: f has an expiry range that the zones serve
// (walksExpiryZones) and more IoCs match than the count cap, and o is an
// order the zones bound other than the expiry's own, whose keys or index
// serve the range. On SQLite the walk is the order's keys; on PostgreSQL
// the order's index, which pageOf leaves to the planner.
func (s *Store) zonesServe(f IoCFilter, o IoCOrder, capped bool, plan *keyPlan, keys *iocKeys) bool {
	if !capped || !walksExpiryZones(f) || o.Field == IoCOrderExpiresAt {
		return false
	}
	if _, _, ok := zoneBoundsOf(o.Field); !ok {
		return false
	}
	if s.Dialect == SQLite {
		return keys != nil && keys == plan.walk
	}
	return keys == nil
}

// zoneWays is which of its two ways pageOfZones takes: both, but tests
// take one alone.
var zoneWays = struct{ walk, zones bool }{walk: true, zones: true}

// pageOfZones reads up to limit IoCs of f (zonesServe) in order o after
// the cursor. The walk of the order (its keys, plan's, on SQLite; its
// index on PostgreSQL) meets the range's IoCs soon when they are spread
// over the order, but after every other IoC when they lie at its far end:
// the short-lived IoCs that an ingest brought in are the newest, and the
// first page of expiresBefore +1d by first sighting read the 10,000,000
// IoCs seen before them (1.2 s on either database). The zones bound the
// order's column in each run of ids, and a read of the zones that meet
// the range, in the order of those bounds, stops at the first zone that
// cannot hold an IoC of the page: one zone or two when the order follows
// the ids, as sightings do. When the order does not follow the ids the
// bounds overlap and that read takes every zone of the range. So the
// page takes both (race), the zones' read alone for its first step (the
// zones and the first one's IoCs), which is all most pages need: the
// walk, started first and beside it, took the core the read needed on two
// cores beside an ingest. At 10,000,000 IoCs on SQLite, first pages of
// expiresBefore +1d by first sighting and by score, back to back during
// an ingest, had medians of 8.5-8.9 / 12.2-15.9 ms and p90 15.7-20.5 /
// 27.7-31.5 with the walk first, 5.7-6.4 / 10.2-11.6 and 13.9-15.8 /
// 24.8-26.2 with the zones' read first (docs/benchmarks.md).
func (s *Store) pageOfZones(ctx context.Context, f IoCFilter, o IoCOrder, plan *keyPlan, keys *iocKeys, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	var walk wayStep
	var walked func(context.Context) ([]IoC, error)
	if keys != nil {
		// One statement, which SQLite interrupts where it stands.
		var rows []IoC
		walk = func(ctx context.Context) (bool, error) {
			var err error
			rows, err = s.pageByKeys(ctx, f, plan.stamp, keys, o, after, cursorValue, cursorID, limit)
			return true, err
		}
		walked = func(context.Context) ([]IoC, error) { return rows, nil }
	} else {
		// Steps of the cap, not doubling: the way not done first ends the
		// step it is taking on PostgreSQL (race), beside the next
		// requests, and the zones' read wins most races it starts.
		w := &prefixWalk{after: after, key: cursorValue, id: cursorID, rows: max(s.countCap(), 2*limit)}
		w.most = w.rows
		walk = func(ctx context.Context) (bool, error) { return s.stepPrefixWalk(ctx, f, o, limit, w) }
		walked = func(ctx context.Context) ([]IoC, error) { return s.iocsOfPrefix(ctx, f, o, w.found, limit) }
	}
	z := &zoneRead{}
	zones := func(ctx context.Context) (bool, error) {
		return s.stepZones(ctx, f, o, after, cursorValue, cursorID, limit, z)
	}
	var ways []wayStep
	var answer []func(context.Context) ([]IoC, error)
	if zoneWays.zones {
		ways = append(ways, zones)
		answer = append(answer, func(ctx context.Context) ([]IoC, error) { return s.iocsOfPrefix(ctx, f, o, z.best, limit) })
	}
	if zoneWays.walk {
		ways, answer = append(ways, walk), append(answer, walked)
	}
	way, err := s.race(ctx, 0, ways...)
	if err != nil {
		return nil, err
	}
	return answer[way](ctx)
}

// zoneRead is how far pageOfZones has read the zones.
type zoneRead struct {
	started bool
	// zones is the zones meeting the range and not read yet, in the order
	// of their bounds (bound) of the page's order, the nearest first.
	zones []zoneBound
	// best is the first matches met so far in the page's order, after the
	// page's cursor.
	best []prefixMatch
}

// zoneBound is a zone and its bound of an order: the least value of the
// order's column among its IoCs, or the greatest in a descending order.
type zoneBound struct {
	Zone  int64 `bun:"zone"`
	Bound int64 `bun:"bound"`
}

// stepZones takes one step of pageOfZones' read of the zones: the first
// reads the zones that meet f's expiry range and the first one's IoCs,
// each after reads the next zone; done says no zone left can hold an IoC
// of the page. The writers
// widen a zone in the transaction that changes one of its IoCs, so the
// zones hold every IoC a read can see.
func (s *Store) stepZones(ctx context.Context, f IoCFilter, o IoCOrder, after bool, cursorValue any, cursorID int64, limit int, z *zoneRead) (done bool, err error) {
	col := "iocs." + string(o.Field)
	filter := s.rowExpiryFilter(f)
	if !z.started {
		z.started = true
		var err error
		if z.zones, err = s.zonesByBound(ctx, f, o, after, cursorValue); err != nil {
			return false, err
		}
		if z.over(o, limit) {
			return true, nil
		}
	}
	zone := z.zones[0]
	z.zones = z.zones[1:]
	var found []prefixMatch
	// The order's column + 0: PostgreSQL has an index on it, whose walk
	// would meet the zone's IoCs after most others.
	q := filter(s.reader().NewSelect().Model((*IoC)(nil)).ExcludeColumn("*").ColumnExpr(prefixMatchColumns(o)).
		Where("iocs.id BETWEEN ? AND ?", zone.Zone*expiryZone, (zone.Zone+1)*expiryZone-1))
	if err := orderPage(q, col+" + 0", "iocs.id", o, after, cursorValue, cursorID, limit).Scan(ctx, &found); err != nil {
		return false, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	z.best = firstMatches(z.best, found, o.Desc, limit)
	return z.over(o, limit), nil
}

// over says whether no zone left can hold an IoC before the page's last:
// the zones come in the order of their bounds, so when the next one's
// bound and first id (last, descending) do not come before the page's
// last match, no later zone's do either.
func (z *zoneRead) over(o IoCOrder, limit int) bool {
	if len(z.zones) == 0 {
		return true
	}
	if len(z.best) < limit {
		return false
	}
	next, last := z.zones[0], z.best[limit-1]
	if o.Desc {
		return cmp.Or(cmp.Compare(next.Bound, last.Key), cmp.Compare((next.Zone+1)*expiryZone-1, last.ID)) <= 0
	}
	return cmp.Or(cmp.Compare(next.Bound, last.Key), cmp.Compare(next.Zone*expiryZone, last.ID)) >= 0
}

// zonesByBound returns the zones that meet f's expiry range and may hold
// an IoC after the cursor in order o, in the order of their bounds of o,
// the nearest first.
func (s *Store) zonesByBound(ctx context.Context, f IoCFilter, o IoCOrder, after bool, cursorValue any) ([]zoneBound, error) {
	lo, hi, _ := zoneBoundsOf(o.Field)
	near, far, dir := lo, hi, "ASC"
	if o.Desc {
		near, far, dir = hi, lo, "DESC"
	}
	q := zonesMeeting(s.reader().NewSelect().Table("ioc_expiry_zones").ColumnExpr("zone, "+near+" AS bound"), "ioc_expiry_zones", f)
	if after {
		// A zone whose far bound is before the cursor holds nothing after it.
		cmp := ">="
		if o.Desc {
			cmp = "<="
		}
		q = q.Where(far+" "+cmp+" ?", orderKeyValue(cursorValue))
	}
	var zones []zoneBound
	if err := q.OrderExpr("bound "+dir+", zone "+dir).Scan(ctx, &zones); err != nil {
		return nil, fmt.Errorf("store: unable to read the expiry zones: %w", err)
	}
	return zones, nil
}

// orderKeyValue is a cursor's value of an order of integers or times as
// its column holds it.
func orderKeyValue(v any) any {
	if t, ok := v.(time.Time); ok {
		return micros(t)
	}
	return v
}

// firstMatches returns the first limit of a and b, each in the page's
// order (descending when desc), in that order, an IoC met in both once.
func firstMatches(a, b []prefixMatch, desc bool, limit int) []prefixMatch {
	all := append(slices.Clone(a), b...)
	slices.SortStableFunc(all, func(x, y prefixMatch) int {
		if desc {
			x, y = y, x
		}
		return cmp.Or(cmp.Compare(x.Key, y.Key), cmp.Compare(x.ID, y.ID))
	})
	seen := make(map[int64]bool, len(all))
	out := all[:0]
	for _, m := range all {
		if !seen[m.ID] && len(out) < limit {
			seen[m.ID] = true
			out = append(out, m)
		}
	}
	return out
}

// fewExpiring says whether a page of f in order o, with keys the keys
// pageOf would walk (nil for none), is pageOfFewExpiring's: on PostgreSQL,
// f is an expiry range that no more IoCs match than the count cap, and o is
// neither id order (the zones serve it) nor the expiry's (its index does).
func (s *Store) fewExpiring(f IoCFilter, o IoCOrder, capped bool, keys *iocKeys) bool {
	return s.Dialect == Postgres && !capped && keys == nil && walksExpiryZones(f) &&
		o.Field != IoCOrderID && o.Field != IoCOrderExpiresAt
}

// pageOfFewExpiring reads up to limit IoCs of f (fewExpiring) in order o
// after the cursor: every match, through iocs_expires_idx, sorted. Left to
// the planner, whose statistics did not yet hold a sweep or an ingest just
// done, the page walked the order's index expecting many matches: 1.4-2.0
// s for expiresBefore +1d by first sighting, with none left, right after a
// sweep of 2,000,000 at 11,000,000 IoCs. An expiresBefore alone walks down
// from its bound, as its count does. ok is false when more IoCs match now
// than the cap (written since the count): the page is then a capped one.
func (s *Store) pageOfFewExpiring(ctx context.Context, f IoCFilter, o IoCOrder, after bool, cursorValue any, cursorID int64, limit int) (rows []IoC, ok bool, err error) {
	dir := "ASC"
	if f.ExpiresBefore != nil && f.ExpiresAfter == nil {
		dir = "DESC"
	}
	q, _, _ := s.applyIoCFilter(s.reader().NewSelect().Model(&rows), f)
	if after {
		q = afterCursor(q, "iocs."+string(o.Field), "iocs.id", o, cursorValue, cursorID)
	}
	q = q.OrderExpr("iocs.expires_at " + dir + ", iocs.id " + dir).Limit(int64(s.countCap()) + 1)
	if err := q.Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	if len(rows) > s.countCap() {
		return nil, false, nil
	}
	sortInOrder(rows, o)
	return rows[:min(len(rows), limit)], true, nil
}

// sortInOrder sorts rows in order o, then by id.
func sortInOrder(rows []IoC, o IoCOrder) {
	slices.SortFunc(rows, func(a, b IoC) int {
		if o.Desc {
			a, b = b, a
		}
		return cmp.Or(compareIn(o.Field, &a, &b), cmp.Compare(a.ID, b.ID))
	})
}

// compareIn compares two IoCs by field's column.
func compareIn(field IoCOrderField, a, b *IoC) int {
	switch field {
	case IoCOrderValue:
		return cmp.Compare(a.Value, b.Value)
	case IoCOrderType:
		return cmp.Compare(a.Type, b.Type)
	case IoCOrderScore:
		return cmp.Compare(a.Score, b.Score)
	case IoCOrderFirstSeen:
		return a.FirstSeen.Compare(b.FirstSeen)
	case IoCOrderLastSeen:
		return a.LastSeen.Compare(b.LastSeen)
	case IoCOrderExpiresAt:
		return a.ExpiresAt.Compare(b.ExpiresAt)
	}
	return 0
}
