package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// sightingsSQLite is the sightings table of SQLite, with or without the
// foreign key to feeds.
func sightingsSQLite(table string, feedKey bool) string {
	ref := ""
	if feedKey {
		ref = " REFERENCES feeds (id) ON DELETE CASCADE"
	}
	return `CREATE TABLE ` + table + ` (
	ioc_id BIGINT NOT NULL,
	feed_id BIGINT NOT NULL` + ref + `,
	source TEXT NOT NULL,
	score INTEGER NOT NULL,
	tags TEXT,
	first_seen BIGINT NOT NULL,
	last_seen BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	PRIMARY KEY (ioc_id, feed_id, source)
) WITHOUT ROWID`
}

// rebuildSightingsSQLite copies sightings into a table of the same columns,
// with or without the foreign key: SQLite cannot drop or add a constraint.
func rebuildSightingsSQLite(ctx context.Context, db *bun.DB, feedKey bool) error {
	return exec(ctx, db, sightingsSQLite("sightings_rebuilt", feedKey),
		`INSERT INTO sightings_rebuilt (ioc_id, feed_id, source, score, tags, first_seen, last_seen, expires_at)
SELECT ioc_id, feed_id, source, score, tags, first_seen, last_seen, expires_at FROM sightings`,
		`DROP TABLE sightings`,
		`ALTER TABLE sightings_rebuilt RENAME TO sightings`,
		`CREATE INDEX sightings_feed_idx ON sightings (feed_id, expires_at, ioc_id)`)
}

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// SQLite now drops the foreign key PostgreSQL dropped in
		// 20261225000100, for the same reasons: its check, a look-up of the
		// feed per sighting written, cost 0.12 s of CPU per 1,000,000 new
		// sightings, about half of what the change stamp added to ingestion
		// (docs/benchmarks.md), and nothing needs it (a feed's sightings are
		// deleted before the feed, and a batch checks its feed under the
		// write lock before it commits). The table is rebuilt once.
		if db.Dialect().Name() == dialect.PG {
			return nil
		}
		return rebuildSightingsSQLite(ctx, db, false)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			return nil
		}
		if err := exec(ctx, db, `DELETE FROM sightings WHERE feed_id NOT IN (SELECT id FROM feeds)`); err != nil {
			return err
		}
		return rebuildSightingsSQLite(ctx, db, true)
	})
}
