package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The dashboard's First seen order. New IoCs are first seen near
		// now, so they append at the index's right edge as they do to
		// iocs_last_seen_idx, and a re-sighting changes first_seen only in
		// the rare case a feed reports an older sighting (docs/decisions.md,
		// "Ordering IoCs by first seen": its cost to ingestion).
		return exec(ctx, db, `CREATE INDEX iocs_first_seen_idx ON iocs (first_seen, id)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP INDEX iocs_first_seen_idx`)
	})
}
