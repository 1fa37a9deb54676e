package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// Where the key cleaner stopped and whether it rests, kept in the
		// database rather than in each process: a process that started
		// walked every key table again from its start (45,000,000 stale
		// tag and value keys piled up at 10,000,000 IoCs behind processes
		// that never finished a pass), and the instances on one
		// PostgreSQL each walked all of them. One row, JSON: a position
		// is only a hint, and a state this version cannot read starts a
		// new pass.
		return exec(ctx, db, `CREATE TABLE ioc_key_cleaner (
	id INTEGER PRIMARY KEY,
	state TEXT NOT NULL
)`, `INSERT INTO ioc_key_cleaner (id, state) VALUES (1, '{}')`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE ioc_key_cleaner`)
	})
}
