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
		// The IoCs of each day of expiries (UTC) in value order: a page of
		// an expiry range by value merges the range's few days
		// (store.pageOfExpiryDays). On SQLite the same index cost the
		// writers a quarter of their rate past 3,000,000 IoCs
		// (docs/benchmarks.md, session 36). At 10,000,000 IoCs the build
		// took 12.5 s (770 MB), writes waiting (reads go on).
		return exec(ctx, db,
			`SET LOCAL maintenance_work_mem = '256MB'`,
			`CREATE INDEX IF NOT EXISTS iocs_expiry_day_value_idx ON iocs ((expires_at / 86400000000), value, id)`)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.PG {
			return nil
		}
		return exec(ctx, db, `DROP INDEX IF EXISTS iocs_expiry_day_value_idx`)
	})
}
