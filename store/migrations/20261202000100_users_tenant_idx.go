package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// A tenant read counts its users: an index range instead of a pass
		// over every user on each tenant GET.
		return exec(ctx, db, `CREATE INDEX users_tenant_idx ON users (tenant_id)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP INDEX users_tenant_idx`)
	})
}
