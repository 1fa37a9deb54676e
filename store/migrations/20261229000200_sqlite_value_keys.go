package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			return nil // its value keys have their trigram index (20261227000100)
		}
		// Search's value keys on SQLite, as on PostgreSQL: a trigram index
		// the key indexer fills after the writers. Scanning a million
		// values took 65-100 ms on two cores, a read of the index 1-4 ms
		// (docs/decisions.md, "Search on SQLite through FTS5"). The rowid is
		// the IoC's id; a value never changes, so its key holds while the
		// IoC is there. detail='none': a LIKE needs no positions. The
		// indexer starts over from stamp 0, so that the IoCs stored before
		// get their keys (the other keys' inserts are idempotent).
		return exec(ctx, db, `CREATE VIRTUAL TABLE ioc_value_keys USING fts5(value, tokenize = 'trigram', detail = 'none')`,
			`UPDATE ioc_keys_state SET stamp = 0 WHERE id = 1`)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			return nil
		}
		return exec(ctx, db, `DROP TABLE ioc_value_keys`)
	})
}
