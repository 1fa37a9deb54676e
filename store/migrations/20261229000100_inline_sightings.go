package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// sightingColumns are the columns of a sighting, in the order of the
// sightings view and of sighting_rows.
const sightingColumns = "ioc_id, feed_id, source, score, tags, first_seen, last_seen, expires_at"

// sightingsView is every sighting: the rows of sighting_rows, and the one
// sighting an IoC keeps in its own row. Both databases push a condition on
// ioc_id or feed_id into each arm (a primary key probe, a range of each
// feed index), so readers query it as they queried the table.
const sightingsView = `CREATE VIEW sightings AS
SELECT ` + sightingColumns + ` FROM sighting_rows
UNION ALL
SELECT id, feed_id, source, score, tags, first_seen, last_seen, expires_at FROM iocs WHERE feed_id IS NOT NULL`

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// An IoC reported by one (feed, source) keeps that sighting in its
		// own row: iocs.feed_id and iocs.source, its score, tags, times and
		// expiry being the IoC's. Only an IoC with more than one sighting
		// (or that had) has rows in sighting_rows, and then all of them, its
		// feed_id being NULL. Most IoCs are reported by one feed: each such
		// sighting saves a heap row and two index entries, a fifth of
		// PostgreSQL's ingestion (docs/decisions.md, "Inline sightings").
		// Stored sightings stay rows: nothing moves.
		stmts := []string{
			`ALTER TABLE sightings RENAME TO sighting_rows`,
			`ALTER TABLE iocs ADD COLUMN feed_id BIGINT`,
			`ALTER TABLE iocs ADD COLUMN source TEXT`,
			// As sightings_feed_idx for the rows: a feed's sweep, deletion
			// and counts. Partial: an IoC without an inline sighting costs
			// it nothing.
			`CREATE INDEX iocs_feed_idx ON iocs (feed_id, expires_at, id) WHERE feed_id IS NOT NULL`,
			sightingsView,
		}
		if db.Dialect().Name() == dialect.PG {
			stmts = append(stmts, `ALTER INDEX sightings_pkey RENAME TO sighting_rows_pkey`,
				`ALTER TABLE iocs ADD CONSTRAINT iocs_inline_sighting CHECK ((feed_id IS NULL) = (source IS NULL))`)
		}
		return exec(ctx, db, stmts...)
	}, func(ctx context.Context, db *bun.DB) error {
		stmts := []string{
			`DROP VIEW sightings`,
			`INSERT INTO sighting_rows (` + sightingColumns + `)
SELECT id, feed_id, source, score, tags, first_seen, last_seen, expires_at FROM iocs WHERE feed_id IS NOT NULL`,
			`DROP INDEX iocs_feed_idx`,
		}
		if db.Dialect().Name() == dialect.PG {
			stmts = append(stmts, `ALTER TABLE iocs DROP CONSTRAINT iocs_inline_sighting`,
				`ALTER INDEX sighting_rows_pkey RENAME TO sightings_pkey`)
		}
		stmts = append(stmts, `ALTER TABLE iocs DROP COLUMN source`, `ALTER TABLE iocs DROP COLUMN feed_id`,
			`ALTER TABLE sighting_rows RENAME TO sightings`)
		return exec(ctx, db, stmts...)
	})
}
