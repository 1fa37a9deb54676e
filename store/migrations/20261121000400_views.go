package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `
CREATE TABLE saved_views (
	id {id},
	user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	table_name TEXT NOT NULL,
	name TEXT NOT NULL,
	definition TEXT NOT NULL, -- opaque to SQL: kept byte for byte
	is_default BOOLEAN NOT NULL DEFAULT FALSE,
	created_at {ts} NOT NULL,
	updated_at {ts} NOT NULL,
	UNIQUE (user_id, table_name, name)
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE saved_views`)
	})
}
