package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			return nil // no order keys since 20270112000100
		}
		// How many keys each order's table holds, kept by whoever adds or
		// deletes them in the same transaction: with the IoCs' kept count
		// it bounds the keys that no longer hold, so that a count of a
		// range of keys past the count cap is known to pass it without a
		// look at each key's IoC (store.Store.heldKeysPast). Counted here
		// once: 7.8 s for the four tables at 10,000,000 IoCs.
		stmts := []string{`CREATE TABLE ioc_order_key_rows (
	name TEXT NOT NULL PRIMARY KEY,
	rows BIGINT NOT NULL
) WITHOUT ROWID`}
		for _, table := range orderKeyTables {
			stmts = append(stmts, `INSERT INTO ioc_order_key_rows (name, rows) SELECT '`+table+`', count(*) FROM `+table)
		}
		return exec(ctx, db, stmts...)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			return nil
		}
		return exec(ctx, db, `DROP TABLE ioc_order_key_rows`)
	})
}
