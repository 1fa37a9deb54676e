package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.PG {
			return nil
		}
		// On PostgreSQL the SCORE, FIRST_SEEN, LAST_SEEN and
		// EXPIRATION_DATE orders and the minScore and expiry ranges go
		// back to indexes on iocs, which the writers keep: the key
		// indexer's order keys cost about 20 µs of a core per changed IoC
		// and never caught up under a constant ingest on two cores, the
		// indexes cost the writers a B-tree insert each, most of them at
		// the index's right end (docs/decisions.md, "PostgreSQL: the
		// orders on indexes again"). SQLite keeps its key tables: its one
		// writer pays for an index in every batch.
		stmts := []string{
			`CREATE INDEX iocs_score_idx ON iocs (score, id)`,
			`CREATE INDEX iocs_first_seen_idx ON iocs (first_seen, id)`,
			`CREATE INDEX iocs_last_seen_idx ON iocs (last_seen, id)`,
			`CREATE INDEX iocs_expires_idx ON iocs (expires_at, id)`,
		}
		for _, table := range orderKeyTables {
			stmts = append(stmts, `DROP TABLE `+table)
		}
		return exec(ctx, db, stmts...)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.PG {
			return nil
		}
		stmts := []string{
			`DROP INDEX iocs_score_idx`,
			`DROP INDEX iocs_first_seen_idx`,
			`DROP INDEX iocs_last_seen_idx`,
			`DROP INDEX iocs_expires_idx`,
		}
		for _, table := range orderKeyTables {
			stmts = append(stmts, `CREATE TABLE `+table+` (
	key BIGINT NOT NULL,
	id BIGINT NOT NULL,
	stamp BIGINT NOT NULL,
	PRIMARY KEY (key, id)
)`, `CREATE INDEX `+table+`_id_idx ON `+table+` (id)`)
		}
		// The indexer makes every key again (the tag keys' inserts are
		// idempotent).
		stmts = append(stmts, `UPDATE ioc_keys_state SET stamp = 0 WHERE id = 1`)
		return exec(ctx, db, stmts...)
	})
}
