package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/tifeeds/tifeeds/ioc"
)

// The expiry zones (ioc_expiry_zones, migration 20270113000100) cut the ids
// into runs of expiryZone and keep, for each run that has IoCs, the
// earliest and the latest expiry among them (lo, hi), as PostgreSQL's BRIN
// indexes do for pages. A page of an expiry range in id order walks only
// the zones whose span meets the range. Without them it walked the primary
// key from the oldest IoC: IoCs with a short life are the newest, and at
// 10,000,000 IoCs the first page of expiresBefore +1d read ten million rows
// before its first match (2.7 s on PostgreSQL, 0.6-1.2 s on SQLite;
// docs/benchmarks.md, "Expiry zones").
//
// Each zone keeps the same of its IoCs' first and last sightings and
// scores (migration 20270119000100), by which pageOfZones reads the zones
// of an expiry range in those orders.
//
// A zone's span holds every IoC of the zone: each writer of iocs widens
// the zones of the IoCs it changes in its own transaction
// (widenExpiryZones), where the key indexer did with each chunk, and
// readers took the IoCs changed since from iocs. A span only widens with
// changes; the sweep and the other deleters narrow the zones of the IoCs
// they delete, and the cleaner recomputes every zone in its passes (a
// re-sighting leaves the old expiry in lo, the old sighting in last_lo).

// expiryZone is how many ids a zone covers: at 10,000,000 IoCs some 600
// zones, read whole by a page in a fraction of a millisecond, and a zone
// that meets a range without holding a match costs its walk at most.
// A variable for the tests, which cut a few IoCs into zones; set before a
// store's first IoC, and the migration's 16384 otherwise.
var expiryZone int64 = 16384

// zoneBounds are the columns whose earliest and latest value among a
// zone's IoCs ioc_expiry_zones keeps, each with its two columns there: the
// expiry, which a range of it selects zones by, and the orders that a page
// of such a range reads zone by zone (pageOfZones).
var zoneBounds = []struct {
	field  IoCOrderField
	lo, hi string
}{
	{IoCOrderExpiresAt, "lo", "hi"},
	{IoCOrderFirstSeen, "first_lo", "first_hi"},
	{IoCOrderLastSeen, "last_lo", "last_hi"},
	{IoCOrderScore, "score_lo", "score_hi"},
}

// zoneBoundsOf returns the columns of ioc_expiry_zones that bound field
// in each zone, if it has some.
func zoneBoundsOf(field IoCOrderField) (lo, hi string, ok bool) {
	for _, b := range zoneBounds {
		if b.field == field {
			return b.lo, b.hi, true
		}
	}
	return "", "", false
}

// zoneColumns lists ioc_expiry_zones' bounds, in zoneBounds' order, and
// the aggregates of iocs that make them (each column + 0: see zoneSpan).
func zoneColumns() (cols, aggregates string) {
	var c, a []string
	for _, b := range zoneBounds {
		c = append(c, b.lo, b.hi)
		a = append(a, "min("+string(b.field)+" + 0)", "max("+string(b.field)+" + 0)")
	}
	return strings.Join(c, ", "), strings.Join(a, ", ")
}

// widenExpiryZones widens the zones of the IoCs changed after from up to
// to to hold their expiry, sightings and score. Every writer of iocs
// widens the zones of what it writes in its transaction, so that a zone
// always holds its IoCs: the sweeper's and a feed removal's recompute
// through this, over the change stamps it took (under the IoC write lock
// on PostgreSQL, SQLite's one writer: no other writer's are among them),
// and the batches through widenZonesOf.
func widenExpiryZones(ctx context.Context, exec writerExec, from, to int64) error {
	cols, aggregates := zoneColumns()
	_, err := exec(ctx, fmt.Sprintf(`INSERT INTO ioc_expiry_zones (zone, %[2]s)
SELECT id / %[1]d, %[3]s FROM iocs WHERE changed_at > $1 AND changed_at <= $2 GROUP BY id / %[1]d
ON CONFLICT (zone) DO UPDATE SET %[4]s`,
		expiryZone, cols, aggregates, zoneWidening()), from, to)
	if err != nil {
		return fmt.Errorf("store: unable to widen the expiry zones: %w", err)
	}
	return nil
}

// widenZonesOf widens the zones of the IoCs of aggs that a batch wrote
// (those with an id) to hold the values it wrote: the same as
// widenExpiryZones over the batch's stamps, from what the batch holds
// rather than a read of its rows again (7 ms a batch of 5,000 on SQLite, a
// fifth of its TSV ingest's rate).
func widenZonesOf(ctx context.Context, exec writerExec, aggs ...[]*aggregate) error {
	type span struct{ lo, hi [4]int64 } // in zoneBounds' order
	spans := map[int64]*span{}
	for _, list := range aggs {
		for _, a := range list {
			if a.id == 0 {
				continue
			}
			v := [4]int64{a.expires, a.first, a.last, int64(a.score)}
			z := spans[a.id/expiryZone]
			if z == nil {
				spans[a.id/expiryZone] = &span{v, v}
				continue
			}
			for i := range v {
				z.lo[i], z.hi[i] = min(z.lo[i], v[i]), max(z.hi[i], v[i])
			}
		}
	}
	if len(spans) == 0 {
		return nil
	}
	var rows []string
	for _, zone := range slices.Sorted(maps.Keys(spans)) {
		z := spans[zone]
		row := []string{strconv.FormatInt(zone, 10)}
		for i := range z.lo {
			row = append(row, strconv.FormatInt(z.lo[i], 10), strconv.FormatInt(z.hi[i], 10))
		}
		rows = append(rows, "("+strings.Join(row, ", ")+")")
	}
	cols, _ := zoneColumns()
	_, err := exec(ctx, fmt.Sprintf(`INSERT INTO ioc_expiry_zones (zone, %s) VALUES %s
ON CONFLICT (zone) DO UPDATE SET %s`, cols, strings.Join(rows, ", "), zoneWidening()))
	if err != nil {
		return fmt.Errorf("store: unable to widen the expiry zones: %w", err)
	}
	return nil
}

// zoneWidening is the SET list of an upsert into ioc_expiry_zones that
// widens a zone to hold the bounds it is given (excluded).
func zoneWidening() string {
	var widen []string
	for _, b := range zoneBounds {
		widen = append(widen,
			fmt.Sprintf("%[1]s = CASE WHEN excluded.%[1]s < ioc_expiry_zones.%[1]s THEN excluded.%[1]s ELSE ioc_expiry_zones.%[1]s END", b.lo),
			fmt.Sprintf("%[1]s = CASE WHEN excluded.%[1]s > ioc_expiry_zones.%[1]s THEN excluded.%[1]s ELSE ioc_expiry_zones.%[1]s END", b.hi))
	}
	return strings.Join(widen, ", ")
}

// zoneSpan returns the bounds of the zone of ioc_expiry_zones' row
// computed from the IoCs in it, in one walk of them. Each column + 0 keeps
// PostgreSQL from finding a min or a max through the column's index,
// walking the index from its end until an IoC of the zone (minutes for
// all the zones at 10,000,000 IoCs): the zone's range of the primary key
// is the walk.
func zoneSpan() string {
	cols, aggregates := zoneColumns()
	return fmt.Sprintf(`(%s) = (SELECT %s FROM iocs WHERE %s)`, cols, aggregates, inZone())
}

// zoneEmpty says, of ioc_expiry_zones' row, that its zone has no IoC.
func zoneEmpty() string { return `NOT EXISTS (SELECT 1 FROM iocs WHERE ` + inZone() + `)` }

// inZone says, of an IoC (iocs), that it is in the zone of
// ioc_expiry_zones' row: a range of the primary key.
func inZone() string {
	return fmt.Sprintf("iocs.id >= ioc_expiry_zones.zone * %[1]d AND iocs.id < ioc_expiry_zones.zone * %[1]d + %[1]d", expiryZone)
}

// recomputeZones are the statements that make the spans of the zones
// that in (a condition on zone) selects those of their IoCs now, and drop
// the zones left without any. Each zone costs two walks of a range of the
// primary key, expiryZone rows at most.
func recomputeZones(in string) [2]string {
	return [2]string{
		`DELETE FROM ioc_expiry_zones WHERE ` + in + ` AND ` + zoneEmpty(),
		`UPDATE ioc_expiry_zones SET ` + zoneSpan() + ` WHERE ` + in,
	}
}

// recomputeExpiryZones recomputes zones (recomputeZones). On SQLite it
// drops the values of those left without IoCs, and with values recomputes
// the values of the others: a walk of each zone's ids more, which the
// deleters leave to the cleaner's pass (values too wide only make a walk
// longer, while the sweep of IoCs spread over every zone recomputes each).
func recomputeExpiryZones(ctx context.Context, tx bun.Tx, zones []int64, values bool) error {
	if len(zones) == 0 {
		return nil
	}
	for _, stmt := range recomputeZones("zone IN (?)") {
		if _, err := tx.ExecContext(ctx, stmt, bun.In(zones)); err != nil {
			return fmt.Errorf("store: unable to recompute expiry zones: %w", err)
		}
	}
	if tx.Dialect().Name() == dialect.PG {
		return nil
	}
	if !values {
		_, err := tx.ExecContext(ctx, `DELETE FROM ioc_zone_values WHERE zone IN (?)
AND NOT EXISTS (SELECT 1 FROM ioc_expiry_zones WHERE ioc_expiry_zones.zone = ioc_zone_values.zone)`, bun.In(zones))
		if err != nil {
			return fmt.Errorf("store: unable to drop the values of empty expiry zones: %w", err)
		}
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM ioc_zone_values WHERE zone IN (?)`, bun.In(zones)); err != nil {
		return fmt.Errorf("store: unable to recompute the values of expiry zones: %w", err)
	}
	b, _ := json.Marshal(zones)
	_, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO ioc_zone_values (zone, type, lo, hi, n, ids)
SELECT z.value, iocs.type, min(iocs.value), max(iocs.value), count(*), CASE WHEN count(*) <= %[2]d THEN group_concat(iocs.id) END
FROM json_each(?) AS z
JOIN iocs ON iocs.id >= z.value * %[1]d AND iocs.id < z.value * %[1]d + %[1]d
GROUP BY z.value, iocs.type`, expiryZone, zoneKindListed), string(b))
	if err != nil {
		return fmt.Errorf("store: unable to recompute the values of expiry zones: %w", err)
	}
	return nil
}

// The zone values (ioc_zone_values, SQLite only, migration 20270124000100)
// keep, for each expiry zone and each kind it holds, the least and the
// greatest value of that kind among its IoCs: like the zones' bounds, they
// hold every IoC of their zone. A page of an expiry range in value order
// walks each kind's values (the (type, value) index) and checks each IoC's
// expiry. A near range's IoCs are a run's short-lived ones, and when their
// values are alike (sequential addresses, hosts and hashes, as a sorted
// feed's and the bench's runs) they lie past most of their kind: the
// growth curve's expiresBefore +1d by value took 0.2-0.3 s at 3,000,000
// IoCs during an ingest and 0.6-0.9 s at 10,000,000 during a sweep. Each
// kind's walk now runs only between the least and the greatest value of
// the zones that meet the range (zonesKinds), and a kind none of them
// holds is not walked (docs/decisions.md, "On SQLite an expiry range in
// value order walks each kind within its zones' values"). A value never
// changes, so only the IoCs a batch inserts widen them (widenZoneValues);
// the cleaner's pass makes them anew, and a zone left without IoCs loses
// them with its span. PostgreSQL reads such a page through its index of
// the days of expiries in value order (pageOfExpiryDays), which cost
// SQLite's one writer a quarter of its rate.

// valueSpan is the least and the greatest value of one kind in some zones.
type valueSpan struct{ lo, hi string }

// A kind with few matches in a range, spread over its values, among many
// IoCs of its own outside it (a feed of IPs that brings a few domains,
// short-lived) made its walk run from the least to the greatest value of
// the range's zones, nearly all its kind: 0.2-0.36 s at 10,000,000 IoCs.
// So the zones' values also count each kind's IoCs in each zone (n) and
// list their ids while they are few (ids, up to zoneKindListed; NULL past
// it, n counting on). A page reads a kind whose every zone of the range
// lists it, at most listedRead ids in all, by those ids, and sorts them
// (zonesKinds). Like the values, n and the ids only grow with inserts; a
// delete leaves ids of IoCs gone, which a read finds no more, and the
// cleaner's pass makes them anew.

// zoneKindListed is how many IoCs of one kind a zone lists the ids of: a
// sixty-fourth of the zone, the list's text some 2 KB at most.
var zoneKindListed = 256

// listedRead is how many listed ids of one kind a page reads, rather than
// walk the kind's values: a few milliseconds of reads by id.
var listedRead = 4096

// betweenZonesKindsReads, when set (by tests), runs between zonesKinds'
// two reads, where a writer may come.
var betweenZonesKindsReads func()

// zonesKind is what the zones that meet an expiry range hold of one kind:
// the span of its values and, when every such zone lists their ids and
// they are at most listedRead, the ids (else nil).
type zonesKind struct {
	valueSpan
	ids []int64
}

// widenZoneValues widens the zone values of the IoCs of aggs that were just
// inserted (those with an id) to hold their values: one upsert of a row
// per zone and kind, the batch's new IoCs being in one zone or two. A
// batch's aggregates come in (kind, value) order and their ids in the same
// order, so a zone's IoCs of one kind are one run of them: spans are made
// run by run, without a map lookup an IoC (in all, 1.5 % of the writer's
// CPU in the bench's TSV ingest). Out of that order a zone and kind would
// only take two rows of the upsert, which SQLite applies one after the
// other.
func widenZoneValues(ctx context.Context, exec writerExec, aggs []*aggregate) error {
	type zoneSpan struct {
		zone int64
		kind ioc.Kind
		valueSpan
		n   int
		ids []byte // while n is at most zoneKindListed
	}
	var spans []zoneSpan
	for _, a := range aggs {
		if a.id == 0 {
			continue
		}
		zone := a.id / expiryZone
		n := len(spans) - 1
		if n >= 0 && spans[n].zone == zone && spans[n].kind == a.kind {
			spans[n].lo, spans[n].hi = min(spans[n].lo, a.value), max(spans[n].hi, a.value)
			spans[n].n++
		} else {
			spans = append(spans, zoneSpan{zone: zone, kind: a.kind, valueSpan: valueSpan{a.value, a.value}, n: 1})
			n++
		}
		if z := &spans[n]; z.n <= zoneKindListed {
			if z.n > 1 {
				z.ids = append(z.ids, ',')
			}
			z.ids = strconv.AppendInt(z.ids, a.id, 10)
		}
	}
	if len(spans) == 0 {
		return nil
	}
	rows := make([]string, 0, len(spans))
	args := make([]any, 0, 6*len(spans))
	for _, z := range spans {
		var ids any
		if z.n <= zoneKindListed {
			ids = string(z.ids)
		}
		rows = append(rows, "(?, ?, ?, ?, ?, ?)")
		args = append(args, z.zone, string(z.kind), z.lo, z.hi, z.n, ids)
	}
	// Every expression of the update reads the row as it was: n the count
	// before this batch's.
	_, err := exec(ctx, `INSERT INTO ioc_zone_values (zone, type, lo, hi, n, ids) VALUES `+strings.Join(rows, ", ")+`
ON CONFLICT (zone, type) DO UPDATE SET lo = min(ioc_zone_values.lo, excluded.lo), hi = max(ioc_zone_values.hi, excluded.hi),
	n = ioc_zone_values.n + excluded.n,
	ids = CASE WHEN ioc_zone_values.n + excluded.n <= `+strconv.Itoa(zoneKindListed)+` THEN ioc_zone_values.ids || ',' || excluded.ids END`, args...)
	if err != nil {
		return fmt.Errorf("store: unable to widen the values of the expiry zones: %w", err)
	}
	return nil
}

// zonesKinds returns, for each kind, what the zones whose span meets f's
// expiry range hold of it (zonesKind): every IoC of the kind that matches
// the range has a value within its span, and an id among its ids when it
// has them; a kind absent has none that does. One read of the zones and of
// their values' rows, and one more of the ids of the kinds they list.
func (s *Store) zonesKinds(ctx context.Context, f IoCFilter) (map[ioc.Kind]zonesKind, error) {
	var rows []struct {
		Type     ioc.Kind
		Lo, Hi   string
		N        int64
		Unlisted int64
	}
	// The values' rows of the zones that meet the range.
	meeting := func() *bun.SelectQuery {
		q := s.reader().NewSelect().TableExpr("ioc_expiry_zones AS z").Join("JOIN ioc_zone_values AS v ON v.zone = z.zone")
		return zonesMeeting(q, "z", f)
	}
	q := meeting().ColumnExpr("v.type, min(v.lo) AS lo, max(v.hi) AS hi, sum(v.n) AS n, count(*) - count(v.ids) AS unlisted").GroupExpr("v.type")
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("store: unable to read the values of the expiry zones: %w", err)
	}
	kinds := make(map[ioc.Kind]zonesKind, len(rows))
	var listed []string
	for _, r := range rows {
		kinds[r.Type] = zonesKind{valueSpan: valueSpan{r.Lo, r.Hi}}
		if r.Unlisted == 0 && r.N <= int64(listedRead) {
			listed = append(listed, string(r.Type))
		}
	}
	if len(listed) == 0 {
		return kinds, nil
	}
	if betweenZonesKindsReads != nil {
		betweenZonesKindsReads()
	}
	var lists []struct {
		Type ioc.Kind
		IDs  *string `bun:"ids"`
	}
	q = meeting().ColumnExpr("v.type, v.ids").Where("v.type IN (?)", bun.In(listed))
	if err := q.Scan(ctx, &lists); err != nil {
		return nil, fmt.Errorf("store: unable to read the ids of the expiry zones: %w", err)
	}
	// A batch written between the two reads may have taken a zone past
	// its list: the kind is walked then.
	walked := map[ioc.Kind]bool{}
	for _, l := range lists {
		if l.IDs == nil {
			walked[l.Type] = true
		}
	}
	for _, l := range lists {
		if walked[l.Type] {
			continue
		}
		k := kinds[l.Type]
		for id := range strings.SplitSeq(*l.IDs, ",") {
			n, err := strconv.ParseInt(id, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("store: the expiry zones list %q as an id of %s", id, l.Type)
			}
			k.ids = append(k.ids, n)
		}
		kinds[l.Type] = k
	}
	return kinds, nil
}

// zonesOf returns the zones of ids, each once.
func zonesOf(ids []int64) []int64 {
	zones := make([]int64, 0, 4)
	for _, id := range ids {
		zones = append(zones, id/expiryZone)
	}
	slices.Sort(zones)
	return slices.Compact(zones)
}

// narrowExpiryZones recomputes, in the transaction that deleted IoCs, the
// zones of ids. Left to the cleaner, the zones of 1,000,000 swept IoCs
// would each cost an expiry page a walk of its ids, for nothing, until it
// passed.
func narrowExpiryZones(ctx context.Context, tx bun.Tx, ids []int64) error {
	return recomputeExpiryZones(ctx, tx, zonesOf(ids), false)
}

// cleanExpiryZones recomputes up to n zones from the zone from on, and
// returns the zone to go on from: 0 past the last.
func cleanExpiryZones(ctx context.Context, tx bun.Tx, from int64, n int) (next int64, err error) {
	var zones []int64
	if err := tx.NewRaw("SELECT zone FROM ioc_expiry_zones WHERE zone >= ? ORDER BY zone LIMIT ?", from, n).Scan(ctx, &zones); err != nil {
		return 0, fmt.Errorf("store: unable to read the expiry zones: %w", err)
	}
	if len(zones) == 0 {
		return 0, nil
	}
	return zones[len(zones)-1] + 1, recomputeExpiryZones(ctx, tx, zones, true)
}

// walksExpiryZones says whether a page of f in id order walks the expiry
// zones: f has an expiry range, and no condition whose own index finds its
// IoCs (a value, a prefix, a feed, a search).
func walksExpiryZones(f IoCFilter) bool {
	return (f.ExpiresBefore != nil || f.ExpiresAfter != nil) &&
		f.Value == "" && f.ValuePrefix == "" && f.FeedID == 0 && f.Search == ""
}

// idRange is the ids from lo to hi, both included.
type idRange struct{ lo, hi int64 }

// pageInExpiryZones reads up to limit IoCs of f (walksExpiryZones) in id
// order o after the cursor: each run of zones whose span meets f's expiry
// range, in the page's direction, until the page is full. The zones hold
// every IoC a read can see (the writers widen them).
func (s *Store) pageInExpiryZones(ctx context.Context, f IoCFilter, o IoCOrder, after bool, cursorID int64, limit int) ([]IoC, error) {
	runs, err := s.expiryZoneRuns(ctx, f, o.Desc, after, cursorID)
	if err != nil {
		return nil, err
	}
	filter := s.rowExpiryFilter(f)
	rows := []IoC{}
	for _, r := range runs {
		need := limit - len(rows)
		if need <= 0 {
			break
		}
		var part []IoC
		q := filter(s.reader().NewSelect().Model(&part))
		q = orderPage(q.Where("iocs.id BETWEEN ? AND ?", r.lo, r.hi), "", "iocs.id", o, after, nil, cursorID, need)
		if err := q.Scan(ctx); err != nil {
			return nil, fmt.Errorf("store: unable to list indicators: %w", err)
		}
		rows = append(rows, part...)
	}
	return rows, nil
}

// rowExpiryFilter returns what applies f to a read whose walk the page
// has chosen (a zone's range of the primary key, a day's run of
// iocs_expiry_day_value_idx): its expiry conditions on expires_at + 0,
// which no index serves, so that they are checked on each row the walk
// meets. PostgreSQL, its statistics not yet holding the IoCs just written,
// read the short-lived ones through iocs_expires_idx, all of them, to sort
// them by id.
func (s *Store) rowExpiryFilter(f IoCFilter) func(q *bun.SelectQuery) *bun.SelectQuery {
	rest := f
	rest.ExpiresBefore, rest.ExpiresAfter = nil, nil
	return func(q *bun.SelectQuery) *bun.SelectQuery {
		q, _, _ = s.applyIoCFilter(q, rest)
		if f.ExpiresBefore != nil {
			q = q.Where("iocs.expires_at + 0 < ?", micros(*f.ExpiresBefore))
		}
		if f.ExpiresAfter != nil {
			q = q.Where("iocs.expires_at + 0 > ?", micros(*f.ExpiresAfter))
		}
		return q
	}
}

// expiryZoneRuns returns the runs of consecutive zones whose span meets f's
// expiry range, as id ranges in the page's direction, from the cursor's
// zone on.
func (s *Store) expiryZoneRuns(ctx context.Context, f IoCFilter, desc, after bool, cursorID int64) ([]idRange, error) {
	q := zonesMeeting(s.reader().NewSelect().Table("ioc_expiry_zones").Column("zone"), "ioc_expiry_zones", f)
	if after && desc {
		q = q.Where("zone <= ?", cursorID/expiryZone)
	} else if after {
		q = q.Where("zone >= ?", cursorID/expiryZone)
	}
	var zones []int64
	if err := q.OrderExpr("zone").Scan(ctx, &zones); err != nil {
		return nil, fmt.Errorf("store: unable to read the expiry zones: %w", err)
	}
	var runs []idRange
	for _, z := range zones {
		if n := len(runs); n > 0 && runs[n-1].hi == z*expiryZone-1 {
			runs[n-1].hi = (z+1)*expiryZone - 1
			continue
		}
		runs = append(runs, idRange{z * expiryZone, (z+1)*expiryZone - 1})
	}
	if desc {
		slices.Reverse(runs)
	}
	return runs, nil
}

// zonesMeeting keeps of q, a read of ioc_expiry_zones as table, the zones
// whose span meets f's expiry range: both ends included on either side, as
// an IoC's expiry may be a span's bound and the range's.
func zonesMeeting(q *bun.SelectQuery, table string, f IoCFilter) *bun.SelectQuery {
	lo, hi := expiryRange(f)
	return q.Where("?.lo <= ? AND ?.hi >= ?", bun.Ident(table), hi, bun.Ident(table), lo)
}

// expiryRange returns f's range of expiries, both bounds included.
func expiryRange(f IoCFilter) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	for _, c := range rangeConditions(f) {
		if c.field == IoCOrderExpiresAt {
			lo, hi = c.lo, c.hi
		}
	}
	return lo, hi
}
