package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			// The foreign key's trigger ran a lookup of the feed per
			// sighting written: two thirds of the cost of copying new
			// sightings (docs/benchmarks.md). Nothing needs it: a feed's
			// sightings are deleted before the feed (Store.DeleteFeed), and
			// a batch for a disabled or deleted feed rolls back
			// (finishBatch checks the feed's row under its lock). SQLite
			// kept its key here (an in-process lookup, and the table must be
			// rebuilt to drop it) until 20261225000500 dropped it as well.
			return exec(ctx, db, `ALTER TABLE sightings DROP CONSTRAINT IF EXISTS sightings_feed_id_fkey`)
		}
		return nil
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			return exec(ctx, db, `DELETE FROM sightings WHERE feed_id NOT IN (SELECT id FROM feeds)`,
				`ALTER TABLE sightings ADD CONSTRAINT sightings_feed_id_fkey FOREIGN KEY (feed_id) REFERENCES feeds (id) ON DELETE CASCADE`)
		}
		return nil
	})
}
