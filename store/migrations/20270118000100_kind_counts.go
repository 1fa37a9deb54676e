package migrations

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The IoCs of each feed and of each tag per kind, kept beside the
		// overview's counts by the same writers in the same transactions:
		// a page in type or value order goes kind after kind, and skips at
		// once a kind that none of its feed's or tag's IoCs have, where it
		// read every IoC of the kind to find none (1.5-2.5 s on
		// PostgreSQL at 10,000,000 IoCs for a tag that only SHA-256s
		// carry, in value order). Filled here from the stored IoCs, one
		// pass.
		create := []string{`CREATE TABLE ioc_count_feed_types (
	feed_id BIGINT NOT NULL,
	type TEXT NOT NULL,
	n BIGINT NOT NULL,
	PRIMARY KEY (feed_id, type)
){norowid}`, `CREATE TABLE ioc_count_tag_types (
	tag {ctext} NOT NULL,
	type TEXT NOT NULL,
	n BIGINT NOT NULL,
	PRIMARY KEY (tag, type)
){norowid}`}
		if db.Dialect().Name() == dialect.PG {
			return exec(ctx, db, append(create,
				`INSERT INTO ioc_count_feed_types (feed_id, type, n) SELECT feed_id, type, sum(n) FROM (
	SELECT feed_id, type, count(*) AS n FROM iocs WHERE feed_id IS NOT NULL GROUP BY 1, 2
	UNION ALL SELECT s.feed_id, iocs.type, count(DISTINCT s.ioc_id) FROM sighting_rows s JOIN iocs ON iocs.id = s.ioc_id GROUP BY 1, 2) AS c
GROUP BY 1, 2`,
				// Tags as store.tagRows reads them (see the overview's counts).
				`INSERT INTO ioc_count_tag_types (tag, type, n) SELECT t, type, count(*) FROM iocs
	CROSS JOIN jsonb_array_elements_text(CASE jsonb_typeof(iocs.tags) WHEN 'array' THEN iocs.tags END) t GROUP BY 1, 2`)...)
		}
		// SQLite groups by sorting, in memory (the writing connection's
		// temp_store): counted as the rows stream by instead, as the
		// scores' counts were.
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			feeds, tags, err := countKinds(ctx, tx)
			if err != nil {
				return err
			}
			for _, stmt := range create {
				if _, err := tx.ExecContext(ctx, dialectSQL(db).Replace(stmt)); err != nil {
					return err
				}
			}
			for _, k := range slices.SortedFunc(maps.Keys(feeds), func(a, b feedKind) int {
				return cmp.Or(cmp.Compare(a.feed, b.feed), strings.Compare(a.kind, b.kind))
			}) {
				if _, err := tx.ExecContext(ctx, "INSERT INTO ioc_count_feed_types (feed_id, type, n) VALUES (?, ?, ?)", k.feed, k.kind, feeds[k]); err != nil {
					return err
				}
			}
			for _, k := range slices.SortedFunc(maps.Keys(tags), func(a, b tagKind) int {
				return cmp.Or(strings.Compare(a.tag, b.tag), strings.Compare(a.kind, b.kind))
			}) {
				if _, err := tx.ExecContext(ctx, "INSERT INTO ioc_count_tag_types (tag, type, n) VALUES (?, ?, ?)", k.tag, k.kind, tags[k]); err != nil {
					return err
				}
			}
			return nil
		})
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE ioc_count_tag_types`, `DROP TABLE ioc_count_feed_types`)
	})
}

type feedKind struct {
	feed int64
	kind string
}

type tagKind struct{ tag, kind string }

// countKinds counts the stored IoCs of each feed (an inline sighting, or
// any rows of the feed) and of each tag (each string of the IoC's tags,
// as json_each reads them) per kind, as the rows stream by.
func countKinds(ctx context.Context, tx bun.Tx) (map[feedKind]int64, map[tagKind]int64, error) {
	feeds, tags := map[feedKind]int64{}, map[tagKind]int64{}
	// Most IoCs share a feed's few tag sets: each decoded once.
	decoded := map[string][]string{}
	err := scan(ctx, tx, "SELECT type, feed_id, tags FROM iocs", func(r *sql.Rows) error {
		var kind string
		var feed sql.NullInt64
		var stored sql.NullString
		if err := r.Scan(&kind, &feed, &stored); err != nil {
			return err
		}
		if feed.Valid {
			feeds[feedKind{feed.Int64, kind}]++
		}
		names, ok := decoded[stored.String]
		if !ok {
			var elems []any
			// Not an array (a JSON null): no tags.
			_ = json.Unmarshal([]byte(stored.String), &elems)
			for _, e := range elems {
				if s, isString := e.(string); isString {
					names = append(names, s)
				}
			}
			decoded[stored.String] = names
		}
		for _, t := range names {
			tags[tagKind{t, kind}]++
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	// An IoC's rows of one feed (one per source) count it once: read in
	// the primary key's order, they are consecutive.
	var lastIoC, lastFeed int64
	err = scan(ctx, tx, "SELECT s.ioc_id, s.feed_id, iocs.type FROM sighting_rows s JOIN iocs ON iocs.id = s.ioc_id ORDER BY s.ioc_id, s.feed_id",
		func(r *sql.Rows) error {
			var id, feed int64
			var kind string
			if err := r.Scan(&id, &feed, &kind); err != nil {
				return err
			}
			if id != lastIoC || feed != lastFeed {
				feeds[feedKind{feed, kind}]++
			}
			lastIoC, lastFeed = id, feed
			return nil
		})
	return feeds, tags, err
}

// scan runs query in tx and each on every row.
func scan(ctx context.Context, tx bun.Tx, query string, each func(*sql.Rows) error) error {
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
