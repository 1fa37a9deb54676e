package migrations

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			return nil
		}
		// How many IoCs of each kind each expiry zone holds, and their ids
		// while they are at most 256 (the store's zoneKindListed): a page
		// of an expiry range in value order reads a kind the range's zones
		// hold few of by those ids rather than walk its values
		// (store/ioc_expiry_zones.go).
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, stmt := range []string{
				`ALTER TABLE ioc_zone_values ADD COLUMN n BIGINT NOT NULL DEFAULT 0`,
				`ALTER TABLE ioc_zone_values ADD COLUMN ids TEXT`,
				`DELETE FROM ioc_zone_values`,
			} {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("migration statement %q: %w", stmt, err)
				}
			}
			return fillZoneValues(ctx, tx, `INSERT INTO ioc_zone_values (zone, type, lo, hi, n, ids)
SELECT ?, type, min(value), max(value), count(*), CASE WHEN count(*) <= 256 THEN group_concat(id) END
FROM iocs WHERE id >= ? AND id < ? GROUP BY type`)
		})
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			return nil
		}
		return exec(ctx, db, `ALTER TABLE ioc_zone_values DROP COLUMN ids`, `ALTER TABLE ioc_zone_values DROP COLUMN n`)
	})
}
