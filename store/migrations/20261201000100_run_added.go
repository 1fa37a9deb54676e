package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The sightings a run added that were new to its feed, which the
		// daily limit counts. Runs before it count all they stored, as the
		// limit did then.
		return exec(ctx, db,
			`ALTER TABLE feed_runs ADD COLUMN added BIGINT NOT NULL DEFAULT 0`,
			`UPDATE feed_runs SET added = stored`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `ALTER TABLE feed_runs DROP COLUMN added`)
	})
}
