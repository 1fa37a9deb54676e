package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// iocKeys is how a page reads its IoCs through a key table (ioc_keys.go).
type iocKeys struct {
	// join makes an IoC query read the key table x joined to iocs, x
	// leading.
	join func(q *bun.SelectQuery) *bun.SelectQuery
	// ordered says that the key table's own order is the page's: x's
	// columns then order the page, so the planner walks its key and stops
	// with the page; otherwise the keys found are sorted.
	ordered bool
	// tag says the keys are the filter's tag: a key that holds is the
	// proof, which the tag condition need not check again.
	tag bool
	// stamp is the key tables' stamp the page reads with.
	stamp int64
}

// sparseTagKeys is the most IoCs of a tag that a page in an order other
// than id reads through the tag keys and sorts: past it, the page walks
// the order's index and stops early, most IoCs having the tag.
const sparseTagKeys = 50_000

// keysFor says whether a page of f in order o reads through a key table,
// and which. The SCORE order without a filter reads ioc_score_keys; on
// SQLite, a tag filter reads ioc_tag_keys unless another condition is the
// one that finds the IoCs (a value, a prefix, a feed, a search), or the
// tag is on most IoCs and the order has an index of its own. Neither does
// while the key indexer lags far behind (see recentKeysMax).
func (s *Store) keysFor(ctx context.Context, f IoCFilter, o IoCOrder) (*iocKeys, error) {
	var keys *iocKeys
	switch {
	case f.empty():
		if o.Field != IoCOrderScore {
			return nil, nil
		}
		keys = &iocKeys{ordered: true, join: func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.ModelTableExpr("ioc_score_keys AS x CROSS JOIN iocs AS iocs").
				Where("iocs.id = x.id AND iocs.changed_at = x.stamp")
		}}
	case s.Dialect != SQLite || f.Tag == "" || f.Value != "" || f.ValuePrefix != "" || f.FeedID != 0 || f.Search != "":
		return nil, nil
	default:
		keys = &iocKeys{ordered: o.Field == IoCOrderID, tag: true, join: func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.ModelTableExpr("ioc_tag_keys AS x CROSS JOIN iocs AS iocs").
				Where("x.tag = ? AND iocs.id = x.id AND iocs.changed_at = x.stamp", f.Tag)
		}}
	}
	var err error
	if keys.stamp, err = s.keysStamp(ctx); err != nil {
		return nil, err
	}
	var recent int
	if err := s.reader().NewRaw("SELECT count(*) FROM (SELECT 1 FROM iocs WHERE changed_at > ? LIMIT ?) r",
		keys.stamp, recentKeysMax+1).Scan(ctx, &recent); err != nil {
		return nil, fmt.Errorf("store: unable to count the indicators changed since their keys: %w", err)
	}
	if recent > recentKeysMax {
		return nil, nil
	}
	if keys.ordered {
		return keys, nil
	}
	var n int
	if err := s.reader().NewRaw("SELECT count(*) FROM (SELECT 1 FROM ioc_tag_keys WHERE tag = ? LIMIT ?) k",
		f.Tag, sparseTagKeys+1).Scan(ctx, &n); err != nil {
		return nil, fmt.Errorf("store: unable to count the keys of tag %q: %w", f.Tag, err)
	}
	if n > sparseTagKeys {
		return nil, nil
	}
	return keys, nil
}

// recentKeysMax is the most IoCs changed since the key tables' stamp that
// a keyed page reads from iocs and sorts. Past it (after a migration, or
// while a long run goes on before the indexer's quiet second), the plain
// query costs less: at 1,000,000 IoCs changed, a keyed first page took
// 132-342 ms on SQLite and 191 ms on PostgreSQL, the plain one 59-108 ms.
var recentKeysMax = 50_000

// keyArms returns the two queries whose union is the IoCs of f: those
// changed up to keys.stamp, found through keys that hold, and those
// changed since, from iocs alone. No IoC is in both, and each is in one as
// long as the key tables are complete up to that stamp: true of any stamp
// they had, since the indexer only adds keys and the cleaner only deletes
// keys that no longer hold. So the stamp is read first, as a value the
// planners can weigh (as a subquery, PostgreSQL guessed a third of the
// table changed).
func (s *Store) keyArms(f IoCFilter, keys *iocKeys) (keyed, recent *bun.SelectQuery) {
	keyedFilter := f
	if keys.tag {
		keyedFilter.Tag = ""
	}
	keyed, _, _ = s.applyIoCFilter(keys.join(s.reader().NewSelect().Model((*IoC)(nil))), keyedFilter)
	recent = s.reader().NewSelect().Model((*IoC)(nil))
	if s.Dialect == SQLite {
		// Without statistics SQLite walked the whole table in id order
		// rather than the few rows changed since.
		recent = recent.ModelTableExpr("iocs AS iocs INDEXED BY iocs_changed_idx")
	}
	recent, _, _ = s.applyIoCFilter(recent, f)
	return keyed.Where("iocs.changed_at <= ?", keys.stamp), recent.Where("iocs.changed_at > ?", keys.stamp)
}

// keysStamp reads how far the key tables are complete.
func (s *Store) keysStamp(ctx context.Context) (int64, error) {
	var stamp int64
	if err := s.reader().QueryRowContext(ctx, "SELECT stamp FROM ioc_keys_state WHERE id = 1").Scan(&stamp); err != nil {
		return 0, fmt.Errorf("store: unable to read the indicator keys' state: %w", err)
	}
	return stamp, nil
}

// pageByKeys reads limit IoCs of f in order o after the cursor, each arm
// ordered and limited on its own, then merged: one statement, so both arms
// see the same state of the tables.
func (s *Store) pageByKeys(ctx context.Context, f IoCFilter, keys *iocKeys, o IoCOrder, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	keyed, recent := s.keyArms(f, keys)
	alias := "iocs"
	if keys.ordered {
		alias = "x"
	}
	keyed = orderPage(keyed, alias, o, after, cursorValue, cursorID, limit, false)
	recent = orderPage(recent, "iocs", o, after, cursorValue, cursorID, limit, false)
	dir := "ASC"
	if o.Desc {
		dir = "DESC"
	}
	order := "id " + dir
	if o.Field != IoCOrderID {
		order = string(o.Field) + " " + dir + ", " + order
	}
	rows := []IoC{}
	var err error
	read := func(db bun.IDB) error {
		return db.NewRaw("SELECT * FROM (?) AS keyed UNION ALL SELECT * FROM (?) AS recent ORDER BY "+order+" LIMIT ?",
			keyed, recent, limit).Scan(ctx, &rows)
	}
	if s.Dialect == Postgres {
		// PostgreSQL planned the key walk in parallel: 10-20 ms of
		// starting workers for a walk of a millisecond.
		err = s.reader().RunInTx(ctx, &sql.TxOptions{ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, "SET LOCAL max_parallel_workers_per_gather = 0"); err != nil {
				return err
			}
			return read(tx)
		})
	} else {
		err = read(s.reader())
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: unable to list indicators: %w", err)
	}
	return rows, nil
}

// countByKeys counts the IoCs of f up to the count cap, through keys.
func (s *Store) countByKeys(ctx context.Context, f IoCFilter, keys *iocKeys) (total int, capped bool, err error) {
	limit := s.countCap()
	keyed, recent := s.keyArms(f, keys)
	one := func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.ExcludeColumn("*").ColumnExpr("1").Limit(int64(limit) + 1)
	}
	if err := s.reader().NewRaw("SELECT (SELECT count(*) FROM (?) AS keyed) + (SELECT count(*) FROM (?) AS recent)",
		one(keyed), one(recent)).Scan(ctx, &total); err != nil {
		return 0, false, fmt.Errorf("store: unable to count indicators: %w", err)
	}
	return min(total, limit), total > limit, nil
}
