package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/tifeeds/tifeeds/ioc"
)

// searchOp is the case-insensitive LIKE of the dialect (SQLite's LIKE
// folds ASCII).
func (s *Store) searchOp() string {
	if s.Dialect == Postgres {
		return "ILIKE"
	}
	return "LIKE"
}

// searchMatches returns the ids of every IoC whose value, or rule text,
// contains search, when there are at most limit of them; sparse is false
// when there are more. Found once, they make the count and the page
// lookups by id; a dense search stops early in the page's order instead.
//
// Values are found through a trigram index on PostgreSQL (the key
// indexer's ioc_value_keys, for the IoCs changed up to its stamp; those
// changed since are scanned). SQLite has no trigram index short of FTS5,
// which is not built into its driver here and would be several times the
// table: it scans the values, split by id across read connections so
// that the machine's cores share the scan.
func (s *Store) searchMatches(ctx context.Context, search string, limit int) (ids []int64, sparse bool, err error) {
	pattern := "%" + likeEscape(search) + "%"
	if s.Dialect == Postgres {
		ids, err = s.searchByKeys(ctx, pattern, limit)
	} else {
		ids, err = s.searchSplit(ctx, pattern, limit)
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: unable to search indicators: %w", err)
	}
	if len(ids) > limit {
		return nil, false, nil
	}
	return ids, true, nil
}

// searchByKeys finds up to limit+1 ids on PostgreSQL.
func (s *Store) searchByKeys(ctx context.Context, pattern string, limit int) ([]int64, error) {
	stamp, err := s.keysStamp(ctx)
	if err != nil {
		return nil, err
	}
	// UNION: an IoC changed since the stamp may also have its key.
	var ids []int64
	err = s.reader().NewRaw(`SELECT x.id FROM ioc_value_keys x JOIN iocs ON iocs.id = x.id WHERE x.value ILIKE ? ESCAPE '\'
UNION SELECT id FROM iocs WHERE changed_at > ? AND value ILIKE ? ESCAPE '\'
UNION SELECT t.ioc_id FROM ioc_texts t JOIN iocs r ON r.id = t.ioc_id WHERE r.type = ? AND t.text ILIKE ? ESCAPE '\'
LIMIT ?`, pattern, stamp, pattern, string(ioc.Rule), pattern, limit+1).Scan(ctx, &ids)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return ids, nil
}

// searchParts is how many id ranges a SQLite search scans at once: the
// machine's two cores, as many as the read pool serves beside a writer.
const searchParts = 2

// searchSplit finds up to limit+1 ids on SQLite, scanning id ranges at
// once on read connections.
func (s *Store) searchSplit(ctx context.Context, pattern string, limit int) ([]int64, error) {
	parts := searchParts
	if s.reads == nil {
		parts = 1 // ":memory:": one connection
	}
	var maxID int64
	if err := s.readDB().QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM iocs").Scan(&maxID); err != nil {
		return nil, err
	}
	found := make([][]int64, parts)
	g, gctx := errgroup.WithContext(ctx)
	for part := range parts {
		lo, hi := maxID*int64(part)/int64(parts), maxID*int64(part+1)/int64(parts)
		if part == parts-1 {
			hi = 1 << 62 // and whatever arrived since
		}
		g.Go(func() error {
			db := s.readDB()
			rows, err := db.QueryContext(gctx, `SELECT id FROM iocs WHERE id > ? AND id <= ? AND value LIKE ? ESCAPE '\'
UNION SELECT t.ioc_id FROM ioc_texts t JOIN iocs r ON r.id = t.ioc_id
WHERE t.ioc_id > ? AND t.ioc_id <= ? AND r.type = ? AND t.text LIKE ? ESCAPE '\'
LIMIT ?`, lo, hi, pattern, lo, hi, string(ioc.Rule), pattern, limit+1)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return err
				}
				found[part] = append(found[part], id)
			}
			return rows.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	ids := slices.Concat(found...)
	slices.Sort(ids)
	return ids, nil
}
