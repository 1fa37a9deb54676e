package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// How far a feed written at a constant rate (RISK_LIST) is through
		// its lists after each run, and when the rest is expected in.
		return exec(ctx, db,
			`ALTER TABLE feed_runs ADD COLUMN backlog_written BIGINT NOT NULL DEFAULT 0`,
			`ALTER TABLE feed_runs ADD COLUMN backlog_total BIGINT NOT NULL DEFAULT 0`,
			`ALTER TABLE feed_runs ADD COLUMN expected_completion {ts}`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db,
			`ALTER TABLE feed_runs DROP COLUMN expected_completion`,
			`ALTER TABLE feed_runs DROP COLUMN backlog_total`,
			`ALTER TABLE feed_runs DROP COLUMN backlog_written`)
	})
}
