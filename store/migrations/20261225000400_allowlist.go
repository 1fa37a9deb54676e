package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The operator's allowlist entries; the built-in lists are data
		// files of the binary. value is normalised (allowlist.ParseEntry),
		// so an entry is listed once.
		return exec(ctx, db, `CREATE TABLE allowlist_entries (
	id {id},
	kind TEXT NOT NULL,
	value {ctext} NOT NULL UNIQUE,
	comment TEXT NOT NULL DEFAULT '',
	created_at {ts} NOT NULL
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE allowlist_entries`)
	})
}
