package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// How many IoCs the sweeper removed per UTC day (day numbered from
		// 1970-01-01), for the dashboard's overview: an expired IoC leaves
		// no row to count afterwards. One row a day, written by the sweeper
		// only, so ingestion does not notice it.
		return exec(ctx, db, `CREATE TABLE ioc_expiry_days (
	day BIGINT PRIMARY KEY,
	expired BIGINT NOT NULL
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE ioc_expiry_days`)
	})
}
