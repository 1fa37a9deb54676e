package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The warninglists' settings: a row per built-in list whose action
		// root changed (the lists themselves are data of the binary), and
		// a row per own list with its content as imported or fetched.
		// Warnings are not stored per IoC: they are a function of the value
		// and the lists in force (docs/decisions.md, issue 27).
		return exec(ctx, db, `CREATE TABLE warninglists (
	name {ctext} PRIMARY KEY,
	action TEXT NOT NULL,
	builtin BOOLEAN NOT NULL,
	content {blob},
	url TEXT NOT NULL DEFAULT '',
	etag TEXT NOT NULL DEFAULT '',
	fetched_at {ts},
	updated_at {ts} NOT NULL,
	created_at {ts} NOT NULL
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE warninglists`)
	})
}
