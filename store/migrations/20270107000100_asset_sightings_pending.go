package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The indicators of an ingestion batch that cover a tenant's asset,
		// written in the batch's own transaction and drained into hits by
		// the asset watch (issue 28, follow-up): a crash between the batch
		// and its hits loses nothing. Times are unix microseconds.
		return exec(ctx, db, `
CREATE TABLE asset_sightings_pending (
	id {id},
	feed_id BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
	kind TEXT NOT NULL,
	value TEXT NOT NULL,
	score INTEGER NOT NULL,
	tags TEXT NOT NULL,
	at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
)`, `CREATE INDEX asset_sightings_pending_feed ON asset_sightings_pending (feed_id)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE asset_sightings_pending`)
	})
}
