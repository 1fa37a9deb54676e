package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/uptrace/bun"
)

// expiryDay is the span of expiries, in microseconds, that one run of
// iocs_expiry_day_value_idx holds in value order: a UTC day. The index
// and expiryDaysIn divide the same way (towards zero), so an IoC's day
// never leaves a range of days that holds its expiry.
const expiryDay = 86_400_000_000

// dayOfExpiry is the expression of iocs_expiry_day_value_idx, which the
// planner matches to the index only when written the same way.
const dayOfExpiry = "iocs.expires_at / 86400000000"

// maxExpiryDays is how many days of expiries a page in value order merges
// at most. Each day costs one seek of the index and at most a page of
// rows; past it the range is wide, and the walk of each kind's values,
// which checks the expiry on each IoC it meets, meets matches soon unless
// the days past the bound hold most IoCs.
const maxExpiryDays = 32

// expiryDaysServe says whether a page of f in order o is pageOfExpiryDays':
// on PostgreSQL, in value order, with an expiry range and no condition on
// the value itself (which the (type, value) index serves) nor a search
// whose every match is known (read by id and sorted). SQLite has no such
// index: its one writer paid a quarter of its rate for it past 3,000,000
// IoCs (docs/decisions.md, "An expiry range in value order merges its
// days, on PostgreSQL").
func (s *Store) expiryDaysServe(f IoCFilter, o IoCOrder) bool {
	return s.Dialect == Postgres && o.Field == IoCOrderValue && (f.ExpiresBefore != nil || f.ExpiresAfter != nil) &&
		f.Value == "" && f.ValuePrefix == "" && !f.searchSparse
}

// pageOfExpiryDays reads up to limit IoCs of f (expiryDaysServe) in value
// order after the cursor: the first page of each day of expiries that
// meets f's range, each in value order from iocs_expiry_day_value_idx,
// merged. Each kind's walk of its values checked the expiry of every IoC
// it met, and met the IoCs of a near range (a run's short-lived ones,
// whose values are alike) after most others: expiresBefore +1d by value
// took 0.1 s at 1,000,000 IoCs and 1.3 s at 10,000,000
// (docs/benchmarks.md, session 36). ok is false when more than
// maxExpiryDays days of expiries meet the range: the page is then left to
// that walk.
func (s *Store) pageOfExpiryDays(ctx context.Context, f IoCFilter, o IoCOrder, after bool, cursorValue any, cursorID int64, limit int) (rows []IoC, ok bool, err error) {
	days, err := s.expiryDaysIn(ctx, f)
	if err != nil || len(days) > maxExpiryDays {
		return nil, false, err
	}
	rows = []IoC{}
	if len(days) == 0 {
		return rows, true, nil
	}
	filter := s.rowExpiryFilter(f)
	members := make([]*bun.SelectQuery, len(days))
	for i, day := range days {
		q := filter(s.reader().NewSelect().Model((*IoC)(nil))).Where(dayOfExpiry+" = ?", day)
		members[i] = inValueOrder(q, false, o.Desc, after, cursorValue, cursorID, limit)
	}
	if err := s.mergedInValueOrder(members, o.Desc, limit, &rows).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	return rows, true, nil
}

// expiryDaysIn returns the days of expiries of the stored IoCs that meet
// f's expiry range, in order, up to one past maxExpiryDays: a seek of
// iocs_expiry_day_value_idx a day, empty days skipped.
func (s *Store) expiryDaysIn(ctx context.Context, f IoCFilter) ([]int64, error) {
	lo, hi := expiryRange(f)
	// An open end has no bound: PostgreSQL reads the literal of the least
	// int64 as a numeric, to which it compares the index's every entry.
	from, args := "", []any{}
	if lo != math.MinInt64 {
		from, args = " WHERE "+dayOfExpiry+" >= ?", append(args, lo/expiryDay)
	}
	hiDay := int64(math.MaxInt64)
	if hi != math.MaxInt64 {
		hiDay = hi / expiryDay
	}
	args = append(args, hiDay, maxExpiryDays, hiDay)
	var days []int64
	err := scanRows(ctx, s.reader(), `WITH RECURSIVE days (day, n) AS (
	SELECT (SELECT min(`+dayOfExpiry+`) FROM iocs`+from+`), 1
	UNION ALL
	SELECT (SELECT min(`+dayOfExpiry+`) FROM iocs WHERE `+dayOfExpiry+` > days.day), n + 1
	FROM days WHERE days.day < ? AND n <= ?
)
SELECT day FROM days WHERE day IS NOT NULL AND day <= ?`, func(r *sql.Rows) error {
		var day int64
		err := r.Scan(&day)
		days = append(days, day)
		return err
	}, args...)
	if err != nil {
		return nil, fmt.Errorf("store: unable to read the days of expiries: %w", err)
	}
	return days, nil
}

// inValueOrder orders q, one member of a page in value order, for that
// page after the cursor: limit rows. When unique, no two of q's IoCs share
// a value (they are of one kind), and the value alone orders them, as the
// unique (type, value) index does (PostgreSQL would sort each value's
// ids after it).
func inValueOrder(q *bun.SelectQuery, unique, desc, after bool, cursorValue any, cursorID int64, limit int) *bun.SelectQuery {
	dir, cmp, bound := "ASC", ">", ">="
	if desc {
		dir, cmp, bound = "DESC", "<", "<="
	}
	if after {
		// The bound on value alone is the one an index serves.
		q = q.Where("iocs.value "+bound+" ?", cursorValue).
			Where("(iocs.value, iocs.id) "+cmp+" (?, ?)", cursorValue, cursorID)
	}
	q = q.OrderExpr("iocs.value " + dir)
	if !unique {
		q = q.OrderExpr("iocs.id " + dir)
	}
	return q.Limit(int64(limit))
}

// mergedInValueOrder is the query of the first limit IoCs of members (each
// a page in value order, inValueOrder), in value order, into into.
func (s *Store) mergedInValueOrder(members []*bun.SelectQuery, desc bool, limit int, into *[]IoC) *bun.SelectQuery {
	dir := "ASC"
	if desc {
		dir = "DESC"
	}
	var union strings.Builder
	for i, q := range members {
		if i > 0 {
			union.WriteString(" UNION ALL ")
		}
		// Each member a subquery: SQLite takes no ORDER BY or LIMIT on the
		// members of a compound select.
		fmt.Fprintf(&union, "SELECT * FROM (%s) AS k%d", q.String(), i)
	}
	return s.reader().NewSelect().Model(into).ModelTableExpr("(?) AS iocs", bun.Safe(union.String())).
		OrderExpr("iocs.value " + dir).OrderExpr("iocs.id " + dir).Limit(int64(limit))
}
