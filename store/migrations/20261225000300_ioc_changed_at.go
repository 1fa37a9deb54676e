package migrations

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// Rows stored before this migration get its time as their change
		// stamp: a constant default, which neither database writes into
		// every row. Writers always set changed_at themselves.
		now := time.Now().UnixMicro()
		return exec(ctx, db,
			// ioc_stats.stamp is the last change stamp handed out: each
			// transaction that writes iocs draws the next one (never below
			// the last, whatever the clock does) while it holds the write
			// lock, so stamps follow commit order (docs/decisions.md,
			// "STIX export and TAXII server").
			fmt.Sprintf(`ALTER TABLE ioc_stats ADD COLUMN stamp BIGINT NOT NULL DEFAULT %d`, now),
			fmt.Sprintf(`ALTER TABLE iocs ADD COLUMN changed_at BIGINT NOT NULL DEFAULT %d`, now),
			// TAXII's keyset: every write appends to it, like
			// iocs_last_seen_idx.
			`CREATE INDEX iocs_changed_idx ON iocs (changed_at, id)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP INDEX iocs_changed_idx`,
			`ALTER TABLE iocs DROP COLUMN changed_at`, `ALTER TABLE ioc_stats DROP COLUMN stamp`)
	})
}
