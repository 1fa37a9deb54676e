package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		stmts := []string{
			// Key tables that the key indexer fills after the writers, in
			// bulk, rather than indexes every batch would pay for
			// (docs/decisions.md, "Key tables"). stamp is the IoC's
			// changed_at when the key was made: the key holds while the
			// IoC has not changed since.
			`CREATE TABLE ioc_score_keys (
	score INTEGER NOT NULL,
	id BIGINT NOT NULL,
	stamp BIGINT NOT NULL,
	PRIMARY KEY (score, id)
) {norowid}`,
			// stamp: every IoC whose change stamp (iocs.changed_at) is at
			// most this has its keys.
			`CREATE TABLE ioc_keys_state (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	stamp BIGINT NOT NULL
)`,
			`INSERT INTO ioc_keys_state (id, stamp) VALUES (1, 0)`,
		}
		if db.Dialect().Name() == dialect.SQLite {
			// PostgreSQL's tag filter has its GIN index (iocs_tags_idx).
			stmts = append(stmts, `CREATE TABLE ioc_tag_keys (
	tag TEXT NOT NULL,
	id BIGINT NOT NULL,
	stamp BIGINT NOT NULL,
	PRIMARY KEY (tag, id)
) WITHOUT ROWID`)
		} else {
			// The search filter's trigram index. A value never changes:
			// its key holds while the IoC is there. pg_trgm is a trusted
			// extension (PostgreSQL 13+): the database's owner may create
			// it. SQLite scans (store/iocs_search.go).
			stmts = append(stmts, `CREATE EXTENSION IF NOT EXISTS pg_trgm`, `
CREATE TABLE ioc_value_keys (
	id BIGINT PRIMARY KEY,
	value TEXT NOT NULL
)`, `CREATE INDEX ioc_value_keys_trgm_idx ON ioc_value_keys USING GIN (value gin_trgm_ops)`)
		}
		return exec(ctx, db, stmts...)
	}, func(ctx context.Context, db *bun.DB) error {
		table := "ioc_value_keys" // the extension stays: others may use it
		if db.Dialect().Name() == dialect.SQLite {
			table = "ioc_tag_keys"
		}
		return exec(ctx, db, `DROP TABLE `+table, `DROP TABLE ioc_keys_state`, `DROP TABLE ioc_score_keys`)
	})
}
