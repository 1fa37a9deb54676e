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
		}
		return exec(ctx, db, stmts...)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.SQLite {
			if err := exec(ctx, db, `DROP TABLE ioc_tag_keys`); err != nil {
				return err
			}
		}
		return exec(ctx, db, `DROP TABLE ioc_keys_state`, `DROP TABLE ioc_score_keys`)
	})
}
