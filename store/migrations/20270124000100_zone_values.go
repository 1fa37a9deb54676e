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
		// The least and greatest value of each kind among the IoCs of each
		// expiry zone: a page of an expiry range in value order walks each
		// kind's values only between the values of the zones that meet the
		// range (store/ioc_expiry_zones.go). PostgreSQL reads such a page
		// through iocs_expiry_day_value_idx instead.
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE ioc_zone_values (
	zone BIGINT NOT NULL,
	type TEXT NOT NULL,
	lo TEXT NOT NULL,
	hi TEXT NOT NULL,
	PRIMARY KEY (zone, type)
) WITHOUT ROWID`); err != nil {
				return fmt.Errorf("migration: unable to create ioc_zone_values: %w", err)
			}
			return fillZoneValues(ctx, tx, `INSERT INTO ioc_zone_values (zone, type, lo, hi)
SELECT ?, type, min(value), max(value) FROM iocs WHERE id >= ? AND id < ? GROUP BY type`)
		})
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			return nil
		}
		return exec(ctx, db, `DROP TABLE ioc_zone_values`)
	})
}

// fillZoneValues runs insert, which fills ioc_zone_values from the IoCs of
// one expiry zone (its arguments the zone, its first id and the id past its
// last), for each zone up to the last IoC's. A zone at a time: grouped in
// one statement, SQLite sorted every IoC's value in memory (890 MB at
// 10,000,000 IoCs).
func fillZoneValues(ctx context.Context, tx bun.Tx, insert string) error {
	var last int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM iocs").Scan(&last); err != nil {
		return err
	}
	for zone := int64(0); zone <= last/16384; zone++ {
		if _, err := tx.ExecContext(ctx, insert, zone, zone*16384, zone*16384+16384); err != nil {
			return fmt.Errorf("migration: unable to fill ioc_zone_values: %w", err)
		}
	}
	return nil
}
