package migrations

import (
	"context"
	"maps"
	"slices"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The IoCs per score, kept beside the overview's counts by the same
		// writers in the same transactions: a minScore page's count is the
		// sum of a few rows where it counted up to the cap through the
		// score keys or the score index, and on SQLite the keys of the
		// range before that to choose its plan (3-7 ms of every such page
		// at 10,000,000 IoCs during an ingest). Filled here from the stored
		// IoCs, one pass.
		create := `CREATE TABLE ioc_count_scores (
	score BIGINT PRIMARY KEY,
	n BIGINT NOT NULL
){norowid}`
		if db.Dialect().Name() == dialect.PG {
			return exec(ctx, db, create, `INSERT INTO ioc_count_scores (score, n) SELECT score, count(*) FROM iocs GROUP BY score`)
		}
		// SQLite groups by sorting, here in memory (the writing
		// connection's temp_store): 550 MB at 10,000,000 IoCs. Counted as
		// the rows stream by instead, in the transaction that writes them.
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			counts := map[int64]int64{}
			rows, err := tx.QueryContext(ctx, "SELECT score FROM iocs")
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var score int64
				if err := rows.Scan(&score); err != nil {
					return err
				}
				counts[score]++
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, dialectSQL(db).Replace(create)); err != nil {
				return err
			}
			for _, score := range slices.Sorted(maps.Keys(counts)) {
				if _, err := tx.ExecContext(ctx, "INSERT INTO ioc_count_scores (score, n) VALUES (?, ?)", score, counts[score]); err != nil {
					return err
				}
			}
			return nil
		})
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE ioc_count_scores`)
	})
}
