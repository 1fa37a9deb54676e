package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
)

// IoCFilter selects IoCs; zero fields select everything.
type IoCFilter struct {
	Types []ioc.Kind
	// Value is a raw value matched exactly after normalisation as each kind
	// of Types (every kind when Types is empty), as ingestion would store it.
	Value       string
	ValuePrefix string
	Search      string // case-insensitive substring of the value
	FeedID      int64
	Tag         string
	// feedDense picks the EXISTS form of FeedID (sizeFeedFilter sets it).
	feedDense bool
	// feedKept, tagKept and scoreKept are the writers' kept counts of the
	// IoCs of FeedID, of Tag and of MinScore and above (sizeFilter reads
	// them).
	feedKept, tagKept, scoreKept int64
	// typesDense says more IoCs are of Types than the count cap (IoCs sets
	// it after counting): on SQLite the page then walks the ids and tests
	// the type, rather than reading every IoC of the kind through the
	// (type, value) index and sorting them (600,000 domains at 3,000,000
	// IoCs: 0.14-2.3 s for a first page, 0.6 ms by the ids).
	typesDense bool
	// keysCounted keeps the keys of its conditions a page counted to plan
	// its reads (pickFinder), for its later plans: IoCs makes it.
	keysCounted map[string]int
	// searchIDs, when searchSparse, are every IoC Search matches (IoCs
	// sets them when there are at most the count cap of them).
	searchIDs     []int64
	searchSparse  bool
	MinScore      *int
	ExpiresBefore *time.Time
	ExpiresAfter  *time.Time
	// prefixEntries, when prefixCounted, is how many entries of the
	// prefix's range in Types IoCs counted, up to one past prefixHandOff,
	// which raceRange would otherwise count again (f having no other
	// condition).
	prefixEntries int
	prefixCounted bool
}

// empty says whether f selects every IoC.
func (f IoCFilter) empty() bool {
	return len(f.Types) == 0 && f.Value == "" && f.ValuePrefix == "" && f.Search == "" && f.FeedID == 0 &&
		f.Tag == "" && f.MinScore == nil && f.ExpiresBefore == nil && f.ExpiresAfter == nil
}

// indexedRange returns the column of iocs whose index alone finds the
// IoCs of f on PostgreSQL (f's one condition is a range condition:
// minScore, or the expiry bounds); "" for any other filter, and on SQLite,
// where the order keys serve those conditions.
func (s *Store) indexedRange(f IoCFilter) string {
	conds := rangeConditions(f)
	if s.Dialect != Postgres || len(conds) != 1 {
		return ""
	}
	rest := f
	conds[0].proves(&rest)
	if !rest.empty() {
		return ""
	}
	return "iocs." + string(conds[0].field)
}

// IoCOrderField is a column IoCs can be ordered by; ties go by id.
type IoCOrderField string

// The orders of IoCs.
const (
	IoCOrderID        IoCOrderField = "id"
	IoCOrderValue     IoCOrderField = "value"
	IoCOrderType      IoCOrderField = "type"
	IoCOrderScore     IoCOrderField = "score"
	IoCOrderFirstSeen IoCOrderField = "first_seen"
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
	IoCs  []IoC
	Total int
	// TotalCapped says Total is a lower bound: a filter matched more IoCs
	// than the count cap (Store.IoCCountCap), and counting stopped there.
	TotalCapped bool
	EndCursor   string
	HasNextPage bool
}

// MaxIoCPage is the largest page IoCs returns.
const MaxIoCPage = 1000

// DefaultIoCCountCap is where a filtered count of IoCs stops. Counting a
// filter that matches most of a million IoCs costs a scan of them (a tag or
// a feed has no count of its own), far more than the page it comes with;
// counting up to 10,000 costs a few milliseconds, and past that an analyst
// refines the filter rather than reads the number.
const DefaultIoCCountCap = 10_000

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
	case IoCOrderFirstSeen:
		c.Value = row.FirstSeen.UTC().Format(time.RFC3339Nano)
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
	case IoCOrderFirstSeen, IoCOrderLastSeen, IoCOrderExpiresAt:
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

// feedIsDense says whether a page of the feed's IoCs is better read by
// probing each IoC (EXISTS) than by listing the feed's IoCs first (IN).
// Probing costs cap*total/feedSize probes for the capped count (fewer for
// the page). SQLite materialises an IN list whole before the page or the
// capped count can stop (a feed of all 1,000,000 IoCs: 180-550 ms). The
// two meet, at a probe costing about three list entries, where feedSize^2
// = 3*cap*total: at 1,000,000 IoCs, 173,000 sightings, some 50 ms either
// way, and each side of it is cheaper; counting the feed stops there.
// PostgreSQL used to merge the page's id order with sightings' primary key
// by itself; the IN list of the sightings view (two index ranges) has no
// id order, so it hashes the feed whole (1,000,000 IoCs: 1.4 s; probing
// 0.1 ms). There counting a feed to 173,000 costs more than the page
// (18-35 ms), and the two forms meet near 40,000 of 1,000,000 IoCs
// (docs/benchmarks.md): a feed past the count cap probes.
//
// The feed's size is the writers' kept count (ioc_count_feeds, the
// overview's). Counting the feed's IoCs up to the meeting point read
// 550,000 index entries at 10,000,000 IoCs on SQLite: 31-64 ms of every
// page of a feed.
func (s *Store) feedIsDense(ctx context.Context, feedID int64) (dense bool, kept int64, err error) {
	limit := int64(s.countCap()) + 1
	if s.Dialect == SQLite {
		st, err := s.IoCStats(ctx)
		if err != nil {
			return false, 0, err
		}
		limit = int64(math.Sqrt(3 * float64(s.countCap()) * float64(st.Count)))
	}
	if kept, err = s.keptCount(ctx, "ioc_count_feeds", "feed_id = ?", feedID); err != nil {
		return false, 0, err
	}
	return kept >= limit, kept, nil
}

// keptCount reads the writers' kept count of the IoCs of the rows of
// table (ioc_count_feeds, _tags or _scores) that cond (with arg) selects:
// one feed, one tag, a range of scores; 0 when there are none.
func (s *Store) keptCount(ctx context.Context, table, cond string, arg any) (int64, error) {
	var n int64
	if err := s.reader().QueryRowContext(ctx, "SELECT coalesce(sum(n), 0) FROM "+table+" WHERE "+cond, arg).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: unable to read a kept count: %w", err)
	}
	return n, nil
}

// keptTotal is how many IoCs match f when f's one condition is a tag, a
// feed or types: the writers keep those counts (the overview's
// ioc_count_tags, _feeds, _types) in the transaction of each write, so one
// row answers what counting the IoCs answered by reading up to the cap's
// worth of them, and at 10,000,000 IoCs a tag's count probed 10,001 keys
// and read every IoC changed since the keys (15-60 ms of each first page).
// A tag's and a feed's are those sizeFilter read. ok is false for any
// other filter.
func (s *Store) keptTotal(ctx context.Context, f IoCFilter) (n int64, ok bool, err error) {
	rest := f
	switch {
	case f.Tag != "":
		rest.Tag, n = "", f.tagKept
	case f.FeedID != 0:
		rest.FeedID, n = 0, f.feedKept
	case f.MinScore != nil:
		rest.MinScore, n = nil, f.scoreKept
	case len(f.Types) > 0:
		rest.Types = nil
	}
	if f.empty() || !rest.empty() {
		return 0, false, nil
	}
	if len(f.Types) > 0 {
		kinds := make([]string, len(f.Types))
		for i, k := range f.Types {
			kinds[i] = string(k)
		}
		// IN counts a kind named twice once.
		if err := s.reader().NewRaw("SELECT coalesce(sum(n), 0) FROM ioc_count_types WHERE type IN (?)", bun.In(kinds)).Scan(ctx, &n); err != nil {
			return 0, false, fmt.Errorf("store: unable to read a kept count: %w", err)
		}
	}
	return n, true, nil
}

// sizeFeedFilter picks the form of f's feed condition (feedIsDense) and
// keeps the feed's kept count.
func (s *Store) sizeFeedFilter(ctx context.Context, f *IoCFilter) error {
	if f.FeedID == 0 {
		return nil
	}
	var err error
	f.feedDense, f.feedKept, err = s.feedIsDense(ctx, f.FeedID)
	return err
}

// sizeFilter reads what a page sizes f's conditions by: the feed's form
// and kept count, and the tag's and the score range's kept counts when
// their keys may find the page (keysFor) or the condition is the filter's
// one.
func (s *Store) sizeFilter(ctx context.Context, f *IoCFilter) error {
	if err := s.sizeFeedFilter(ctx, f); err != nil {
		return err
	}
	if f.Value != "" || f.ValuePrefix != "" || f.FeedID != 0 || f.Search != "" {
		return nil
	}
	var err error
	if f.Tag != "" {
		if f.tagKept, err = s.keptCount(ctx, "ioc_count_tags", "tag = ?", f.Tag); err != nil {
			return err
		}
	}
	if f.MinScore != nil {
		f.scoreKept, err = s.keptCount(ctx, "ioc_count_scores", "score >= ?", *f.MinScore)
	}
	return err
}

func (s *Store) countCap() int {
	if s.IoCCountCap <= 0 {
		return DefaultIoCCountCap
	}
	return s.IoCCountCap
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
		col := "iocs.type"
		if f.typesDense && s.Dialect == SQLite && f.Value == "" && f.ValuePrefix == "" {
			col = "+iocs.type" // no index: see typesDense
		}
		q = q.Where(col+" IN (?)", bun.In(kinds))
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
		// on both databases.
		q = q.Where("iocs.value >= ? AND iocs.value < ?", f.ValuePrefix, prefixEnd(f.ValuePrefix))
		if len(f.Types) == 0 {
			// Every kind named, so that the databases read the range of
			// each in the unique (type, value) index; without a type
			// PostgreSQL read the whole table (116 ms at 1,000,000 IoCs),
			// and so did SQLite without statistics, which it has only
			// from an ANALYZE (62-85 ms, every first prefix page after a
			// restart at 1,000,000 IoCs): its skip through the index's
			// few types needs them to know they are few.
			q = q.Where("iocs.type IN (?)", bun.In(ioc.Kinds))
		}
	}
	if f.Search != "" && f.searchSparse {
		if len(f.searchIDs) == 0 {
			return q, false, nil
		}
		q = q.Where("iocs.id IN (?)", bun.In(f.searchIDs))
	} else if f.Search != "" {
		op := s.searchOp()
		pattern := "%" + likeEscape(f.Search) + "%"
		// A rule is also found by its text (ioc_texts holds only rules').
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("iocs.value "+op+" ? ESCAPE '\\'", pattern).
				WhereOr("iocs.type = ? AND EXISTS (SELECT 1 FROM ioc_texts t WHERE t.ioc_id = iocs.id AND t.text "+op+" ? ESCAPE '\\')", string(ioc.Rule), pattern)
		})
	}
	if f.FeedID != 0 {
		if f.feedDense {
			// The IoC's inline sighting, or a probe of sighting_rows'
			// primary key (an IoC with an inline sighting has no row) per
			// IoC read in the page's order: stops with the page (and the
			// capped count).
			q = q.Where(`(iocs.feed_id = ? OR iocs.feed_id IS NULL AND
	EXISTS (SELECT 1 FROM sighting_rows s WHERE s.ioc_id = iocs.id AND s.feed_id = ?))`, f.FeedID, f.FeedID)
		} else {
			// Driven by the feed's indexes (the view reads a range of
			// each): a small feed among many IoCs costs its own size, not
			// a probe per IoC.
			q = q.Where("iocs.id IN (SELECT s.ioc_id FROM sightings s WHERE s.feed_id = ?)", f.FeedID)
		}
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
	case IoCOrderID, IoCOrderValue, IoCOrderType, IoCOrderScore, IoCOrderFirstSeen, IoCOrderLastSeen, IoCOrderExpiresAt:
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
	f.keysCounted = map[string]int{}
	if err := s.sizeFilter(ctx, &f); err != nil {
		return nil, err
	}
	if f.Search != "" {
		var err error
		if f.searchIDs, f.searchSparse, err = s.searchMatches(ctx, f.Search, s.countCap()); err != nil {
			return nil, err
		}
	}
	count, ok, err := s.applyIoCFilter(s.reader().NewSelect().Model((*IoC)(nil)), f)
	if err != nil || !ok {
		return page, err
	}
	plan, err := s.keysFor(ctx, f, o)
	if err != nil {
		return nil, err
	}
	kept, isKept, err := s.keptTotal(ctx, f)
	if err != nil {
		return nil, err
	}
	if f.empty() {
		// Kept by the writers (ioc_stats): counting a million rows for
		// every first page would cost more than the page.
		st, err := s.IoCStats(ctx)
		if err != nil {
			return nil, err
		}
		page.Total = int(st.Count)
	} else if isKept {
		limit := int64(s.countCap())
		page.Total, page.TotalCapped = int(min(kept, limit)), kept > limit
	} else if plan != nil && plan.find != nil && plan.find.sparse {
		if page.Total, page.TotalCapped, err = s.countByKeys(ctx, f, plan.stamp, plan.find); err != nil {
			return nil, err
		}
	} else if plan != nil && plan.count != nil {
		if page.Total, page.TotalCapped, err = s.countByKeys(ctx, f, plan.stamp, plan.count); err != nil {
			return nil, err
		}
	} else {
		// Few IoCs match and a condition's own index finds them, or many
		// match and counting stops soon.
		limit := s.countCap()
		counted := limit
		if s.rangeCountedOn(f, o, first) {
			// The page past the cap asks the same count of the prefix's
			// range, up to prefixHandOff (raceRange): one count for both.
			counted = prefixHandOff
		}
		// One more than the cap tells "more than" from "exactly".
		capped := count.ExcludeColumn("*").ColumnExpr("1").Limit(int64(counted) + 1)
		if col := s.indexedRange(f); col != "" {
			// Counted in the index's order, the count walks the range's
			// entries and stops at the cap. Unordered, PostgreSQL
			// planned a sequential scan that stops at the cap's matches,
			// expecting them spread over the table: IoCs with a short
			// life are the newest, at the table's end, and expiresBefore
			// +1d read 10,000,000 rows for them (0.6-3.3 s).
			// expiresBefore alone walks down from its bound: the sweeper
			// deletes from the other end, the earliest expiries, and
			// PostgreSQL reads each deleted IoC's entry until a scan may
			// mark it dead (0.2-0.5 s counts during a sweep of 1,000,000).
			if f.ExpiresBefore != nil && f.ExpiresAfter == nil {
				col += " DESC"
			}
			capped = capped.OrderExpr(col)
		}
		var total int
		if err := s.reader().NewSelect().TableExpr("(?) AS matching", capped).ColumnExpr("count(*)").Scan(ctx, &total); err != nil {
			return nil, fmt.Errorf("store: unable to count indicators: %w", err)
		}
		page.Total = min(total, limit)
		page.TotalCapped = total > limit
		if counted > limit {
			f.prefixEntries, f.prefixCounted = total, true
		}
	}
	if first == 0 {
		return page, nil
	}
	rows, err := s.pageOf(ctx, f, o, plan, page.TotalCapped, after != "", cursorValue, cursorID, first+1)
	if err != nil {
		return nil, err
	}
	page.IoCs = rows
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

// pageOf reads up to limit IoCs of f in order o after the cursor, the way
// plan (keysFor) and capped (more IoCs match f than the count cap) say
// serves f and o best.
func (s *Store) pageOf(ctx context.Context, f IoCFilter, o IoCOrder, plan *keyPlan, capped, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	f.typesDense = len(f.Types) > 0 && capped
	if s.racesSparse(f, plan) {
		return s.pageOfSparse(ctx, f, o, plan, capped, after, cursorValue, cursorID, limit)
	}
	if s.boundsSparse(f, plan) {
		return s.pageOfSparseBounded(ctx, f, o, plan, capped, after, cursorValue, cursorID, limit)
	}
	var keys *iocKeys
	switch {
	case plan == nil:
	case plan.find != nil && (plan.find.ordered() || plan.find.sparse):
		keys = plan.find
	case plan.walk != nil && (f.empty() || capped):
		// More IoCs match than the count cap: a walk of the order's keys
		// meets a page of them soon (at 1,000,000 IoCs, after some
		// 10,000 keys at most, unless the filter and the order go
		// together).
		keys = plan.walk
	}
	if keys == nil && o.Field == IoCOrderID && walksExpiryZones(f) {
		return s.pageInExpiryZones(ctx, f, o, after, cursorID, limit)
	}
	if keys == nil && s.expiryDaysServe(f, o) {
		rows, ok, err := s.pageOfExpiryDays(ctx, f, o, after, cursorValue, cursorID, limit)
		if err != nil || ok {
			return rows, err
		}
	}
	rows := []IoC{}
	var q *bun.SelectQuery
	switch {
	case s.fewExpiring(f, o, capped, keys):
		rows, ok, err := s.pageOfFewExpiring(ctx, f, o, after, cursorValue, cursorID, limit)
		if err != nil || ok {
			return rows, err
		}
		return s.pageOf(ctx, f, o, plan, true, after, cursorValue, cursorID, limit)
	case s.zonesServe(f, o, capped, plan, keys):
		return s.pageOfZones(ctx, f, o, plan, keys, after, cursorValue, cursorID, limit)
	case s.keysRaceRange(f, capped, plan, keys):
		return s.pageOfPrefixByKeys(ctx, f, o, plan, keys, after, cursorValue, cursorID, limit)
	case keys != nil:
		return s.pageByKeys(ctx, f, plan.stamp, keys, o, after, cursorValue, cursorID, limit)
	case o.Field == IoCOrderType && f.empty():
		return s.pageByType(ctx, o.Desc, after, cursorValue, cursorID, limit)
	case o.Field == IoCOrderValue && !f.searchSparse:
		// (A search whose every match is known, at most the cap, reads
		// them by id and sorts them, below: each kind's walk of its
		// values met them after most of the kind, 780 ms on SQLite at
		// 10,000,000 IoCs.)
		kinds, err := s.kindsMatching(ctx, f)
		if err != nil || len(kinds) == 0 {
			return rows, err
		}
		var inZones map[ioc.Kind]zonesKind
		if s.Dialect == SQLite && walksExpiryZones(f) {
			if inZones, err = s.zonesKinds(ctx, f); err != nil {
				return nil, err
			}
			kinds = slices.DeleteFunc(kinds, func(k ioc.Kind) bool { _, ok := inZones[k]; return !ok })
			if len(kinds) == 0 {
				return rows, nil
			}
		}
		q = s.byValueOfEachKind(f, kinds, inZones, o.Desc, after, cursorValue, cursorID, limit, &rows)
	case s.prefixPaged(f, o, capped):
		return s.pageOfPrefix(ctx, f, o, capped, after, cursorValue, cursorID, limit)
	case o.Field == IoCOrderType && capped:
		return s.pageOfEachKind(ctx, f, o.Desc, after, cursorValue, cursorID, limit)
	default:
		// In id order, or few IoCs match (or the key tables lag far
		// behind): the filter's conditions on iocs find the page, walking
		// the primary key in id order, else found and sorted.
		q, _, _ = s.applyIoCFilter(s.reader().NewSelect().Model(&rows), f)
		q = orderPage(q, "iocs."+string(o.Field), "iocs.id", o, after, cursorValue, cursorID, limit)
	}
	if err := q.Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	return rows, nil
}

// orderPage orders q (IoCs, filtered) for a page in order o after the
// cursor, limit rows; col and id are the columns that carry the order: iocs'
// own, or a key table's, which lead the planner to its key.
func orderPage(q *bun.SelectQuery, col, id string, o IoCOrder, after bool, cursorValue any, cursorID int64, limit int) *bun.SelectQuery {
	if after {
		q = afterCursor(q, col, id, o, cursorValue, cursorID)
	}
	dir := "ASC"
	if o.Desc {
		dir = "DESC"
	}
	if o.Field != IoCOrderID {
		q = q.OrderExpr(col + " " + dir)
	}
	return q.OrderExpr(id + " " + dir).Limit(int64(limit))
}

// afterCursor keeps of q the IoCs after the cursor in order o, whose
// columns are col and id (see orderPage).
func afterCursor(q *bun.SelectQuery, col, id string, o IoCOrder, cursorValue any, cursorID int64) *bun.SelectQuery {
	cmp := ">"
	if o.Desc {
		cmp = "<"
	}
	if o.Field == IoCOrderID {
		return q.Where("? "+cmp+" ?", bun.Safe(id), cursorID)
	}
	return q.Where("(?, ?) "+cmp+" (?, ?)", bun.Safe(col), bun.Safe(id), orderKeyValue(cursorValue), cursorID)
}

// denseKind is how many IoCs of a kind make SQLite read it in id order
// rather than through the (type, value) index (see pageByType).
var denseKind = 10_000

// pageByType reads up to limit IoCs in type order (then id), unfiltered,
// kind after kind from the cursor's: each kind's rows in id order until the
// page is full. Reason: no index has (type, id) (each costs ingestion), and
// sorting the million rows for a first page took 36-61 ms. Type names sort
// the same in byte order and in any collation's (lower-case ASCII words).
func (s *Store) pageByType(ctx context.Context, desc, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	dir, cmp := "ASC", ">"
	if desc {
		dir, cmp = "DESC", "<"
	}
	cursorKind, _ := cursorValue.(string)
	out := []IoC{}
	for _, k := range kindsFrom(ioc.Kinds, desc, after, cursorKind) {
		need := limit - len(out)
		if need <= 0 {
			break
		}
		typeCond := "iocs.type = ?"
		if s.Dialect == SQLite {
			// SQLite's planner, knowing only the average rows per type,
			// reads a kind through the (type, value) index and sorts it:
			// right for a rare kind, a sort of most of the table for a
			// common one. A common kind is read in id order instead
			// (+type: no index on it), stopping with the page.
			var n int
			if err := s.reader().NewRaw("SELECT count(*) FROM (SELECT 1 FROM iocs WHERE type = ? LIMIT ?)", k, denseKind).Scan(ctx, &n); err != nil {
				return nil, fmt.Errorf("store: unable to count indicators of type %s: %w", k, err)
			}
			if n == 0 {
				continue
			}
			if n >= denseKind {
				typeCond = "+iocs.type = ?"
			}
		}
		var rows []IoC
		q := s.reader().NewSelect().Model(&rows).Where(typeCond, k)
		if after && k == cursorKind {
			q = q.Where("iocs.id "+cmp+" ?", cursorID)
		}
		if err := q.OrderExpr("iocs.id " + dir).Limit(int64(need)).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("store: unable to list indicators: %w", err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// pageOfEachKind reads up to limit IoCs of f, which more IoCs match than
// the count cap, in type order (then id) after the cursor: kind after kind
// from the cursor's, skipping the kinds that none of f's feed's or tag's
// IoCs have (keptKinds), each kind's IoCs in id order the way a page of f
// in id order reads them (pageOf), the kind checked on each IoC met. When
// that walk would read more to meet a page of the kind than the kind has
// IoCs, the kind is read whole through the (type, value) index with f
// checked, and sorted. Left to the planner, as pageByType explains, such a
// page sorted every match: at 10,000,000 IoCs 0.3-1.7 s for a tag on 1 %
// or on all of them, a feed, minScore 90 or expiresAfter now.
func (s *Store) pageOfEachKind(ctx context.Context, f IoCFilter, desc, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	kept, total, err := s.keptKinds(ctx, f)
	if err != nil {
		return nil, err
	}
	byID := IoCOrder{Field: IoCOrderID, Desc: desc}
	// keysFor reads no kinds: one plan in id order serves every kind.
	plan, err := s.keysFor(ctx, f, byID)
	if err != nil {
		return nil, err
	}
	// The walk reads the filter's keys when it has keys in id order, else
	// the IoCs; it meets a kind's matches spread through them.
	walked := total
	if plan != nil && plan.find != nil && plan.find.ordered() {
		walked = int64(plan.find.keys)
	}
	cursorKind, _ := cursorValue.(string)
	out := []IoC{}
	for _, k := range kindsFrom(f.Types, desc, after, cursorKind) {
		need := limit - len(out)
		if need <= 0 {
			break
		}
		n := kept[k]
		if n.matches == 0 {
			continue
		}
		kind := f
		kind.Types = []ioc.Kind{ioc.Kind(k)}
		fromCursor := after && k == cursorKind
		var rows []IoC
		if whole := int64(need)*walked > n.matches*n.all; kindWays.whole && (whole || !kindWays.walk) {
			q, _, _ := s.applyIoCFilter(s.reader().NewSelect().Model(&rows), kind)
			q = orderPage(q, "iocs.id", "iocs.id", byID, fromCursor, nil, cursorID, need)
			if err := q.Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("store: unable to list indicators: %w", err)
			}
		} else if rows, err = s.pageOf(ctx, kind, byID, plan, true, fromCursor, nil, cursorID, need); err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// kindWays is which of the two ways to a kind's IoCs pageOfEachKind
// takes: by the kind's size, but tests take one alone.
var kindWays = struct{ walk, whole bool }{walk: true, whole: true}

// kindCount is what the writers' kept counts tell of the IoCs of one kind:
// how many there are, and at most how many of them a filter matches.
type kindCount struct{ all, matches int64 }

// keptKinds reads the kept counts of the IoCs of each kind f selects
// (ioc_count_types), with the matches at most those of f's feed and of
// its tag of the kind (ioc_count_feed_types, _tag_types), and the count
// of all IoCs.
func (s *Store) keptKinds(ctx context.Context, f IoCFilter) (kinds map[string]kindCount, total int64, err error) {
	kinds = map[string]kindCount{}
	err = scanRows(ctx, s.reader(), "SELECT type, n FROM ioc_count_types", func(r *sql.Rows) error {
		var kind string
		var n int64
		err := r.Scan(&kind, &n)
		if len(f.Types) == 0 || slices.Contains(f.Types, ioc.Kind(kind)) {
			kinds[kind] = kindCount{all: n, matches: n}
		}
		total += n
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("store: unable to read the indicators by type: %w", err)
	}
	bound := func(query string, arg any) error {
		of := map[string]int64{}
		if err := scanRows(ctx, s.reader(), query, countsInto(of), arg); err != nil {
			return fmt.Errorf("store: unable to read the indicators by type: %w", err)
		}
		for kind, c := range kinds {
			c.matches = min(c.matches, of[kind])
			kinds[kind] = c
		}
		return nil
	}
	if f.FeedID != 0 {
		if err := bound("SELECT type, n FROM ioc_count_feed_types WHERE feed_id = ?", f.FeedID); err != nil {
			return nil, 0, err
		}
	}
	if f.Tag != "" {
		if err := bound("SELECT type, n FROM ioc_count_tag_types WHERE tag = ?", f.Tag); err != nil {
			return nil, 0, err
		}
	}
	return kinds, total, nil
}

// kindsMatching is the kinds f selects of which the kept counts say some
// IoCs may match f (keptKinds).
func (s *Store) kindsMatching(ctx context.Context, f IoCFilter) ([]ioc.Kind, error) {
	kept, _, err := s.keptKinds(ctx, f)
	if err != nil {
		return nil, err
	}
	var kinds []ioc.Kind
	for kind, c := range kept {
		if c.matches > 0 {
			kinds = append(kinds, ioc.Kind(kind))
		}
	}
	slices.Sort(kinds)
	return kinds, nil
}

// kindsFrom is kinds' names (every kind's when none) in type order,
// ascending or descending, from the cursor's kind on when after: the kinds
// a page in type order reads.
func kindsFrom(kinds []ioc.Kind, desc, after bool, cursorKind string) []string {
	if len(kinds) == 0 {
		kinds = ioc.Kinds
	}
	names := make([]string, 0, len(kinds))
	for _, k := range kinds {
		if !after || desc && string(k) <= cursorKind || !desc && string(k) >= cursorKind {
			names = append(names, string(k))
		}
	}
	slices.Sort(names)
	if desc {
		slices.Reverse(names)
	}
	return names
}

// byValueOfEachKind is the query of a page in value order: the page of
// each of kinds (those whose IoCs may match f, kindsMatching: each kind
// that has none costs a walk of all its values), read in the order of the
// unique (type, value) index, merged. A kind in inZones (what the expiry
// zones of f's range hold, zonesKinds) is read by the ids they list, or
// else walked only within their values.
// Values are unique within a kind, so a kind's first rows by value are its
// first by (value, id). Reason: no index leads with value (each costs
// ingestion, docs/benchmarks.md), and ordering a million values for a first
// page took 55-60 ms.
func (s *Store) byValueOfEachKind(f IoCFilter, kinds []ioc.Kind, inZones map[ioc.Kind]zonesKind, desc bool, after bool, cursorValue any, cursorID int64, limit int, into *[]IoC) *bun.SelectQuery {
	members := make([]*bun.SelectQuery, len(kinds))
	for i, k := range kinds {
		zk, inRange := inZones[k]
		if zk.ids != nil {
			// No condition on the type an index serves: SQLite would walk
			// the kind's values in order rather than read the few ids and
			// sort them. (k is one of f's types.)
			rest := f
			rest.Types = nil
			q, _, _ := s.applyIoCFilter(s.reader().NewSelect().Model((*IoC)(nil)), rest)
			q = q.Where("+iocs.type = ?", string(k)).Where("iocs.id IN (?)", bun.In(zk.ids))
			members[i] = inValueOrder(q, true, desc, after, cursorValue, cursorID, limit)
			continue
		}
		q, _, _ := s.applyIoCFilter(s.reader().NewSelect().Model((*IoC)(nil)), f)
		q = q.Where("iocs.type = ?", string(k))
		kindAfter := after
		if inRange {
			q, kindAfter = withinSpan(q, zk.valueSpan, desc, after, cursorValue)
		}
		members[i] = inValueOrder(q, true, desc, kindAfter, cursorValue, cursorID, limit)
	}
	return s.mergedInValueOrder(members, desc, limit, into)
}

// withinSpan bounds q, a walk of one kind's values in value order (desc or
// not) after the cursor when after, to span, and says whether the cursor
// still bounds it. The walk starts from one bound: the cursor's when it
// lies within the span or past its start, else the span's start, every
// value from which is past the cursor's value and so after the cursor.
func withinSpan(q *bun.SelectQuery, span valueSpan, desc, after bool, cursorValue any) (*bun.SelectQuery, bool) {
	start, end := span.lo, span.hi
	from, to := ">=", "<="
	if desc {
		start, end, from, to = end, start, to, from
	}
	q = q.Where("iocs.value "+to+" ?", end)
	cursor, ok := cursorValue.(string)
	if after && (!ok || desc && cursor <= start || !desc && cursor >= start) {
		return q, true
	}
	return q.Where("iocs.value "+from+" ?", start), false
}

// IoC returns the IoC with id.
func (s *Store) IoC(ctx context.Context, id int64) (*IoC, error) {
	i := new(IoC)
	if err := s.reader().NewSelect().Model(i).Where("id = ?", id).Scan(ctx); err != nil {
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
	if err := s.reader().NewSelect().Model(&out).Where("ioc_id = ?", iocID).
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

// prefixEnd is the upper bound, left out, of the values that start with
// prefix: no valid UTF-8 string sorts after U+10FFFF.
func prefixEnd(prefix string) string { return prefix + "\U0010FFFF" }
