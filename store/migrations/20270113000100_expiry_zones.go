package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The expiry zones: for each run of 16,384 ids (zone = id / 16384),
		// the earliest and latest expiry among its IoCs, or no row when it
		// has none. A page of an expiry range in id order walks only the
		// zones whose span meets the range: short-lived IoCs are the
		// newest, and the walk from the oldest IoC read 10,000,000 rows
		// before the first (store/ioc_expiry_zones.go). Filled here from
		// every IoC, a range of the primary key a zone, so that the zones
		// hold for whatever ioc_keys_state.stamp says; the key indexer
		// widens them with each chunk from now on.
		return exec(ctx, db,
			`CREATE TABLE ioc_expiry_zones (
	zone BIGINT NOT NULL PRIMARY KEY,
	lo BIGINT NOT NULL,
	hi BIGINT NOT NULL
) {norowid}`,
			`INSERT INTO ioc_expiry_zones (zone, lo, hi)
WITH RECURSIVE zones (zone) AS (
	SELECT CAST(0 AS BIGINT) UNION ALL SELECT zone + 1 FROM zones WHERE zone < (SELECT coalesce(max(id), 0) FROM iocs) / 16384
)
SELECT zone, lo, hi FROM (SELECT zone,
	(SELECT min(expires_at + 0) FROM iocs WHERE id >= zone * 16384 AND id < zone * 16384 + 16384) AS lo,
	(SELECT max(expires_at + 0) FROM iocs WHERE id >= zone * 16384 AND id < zone * 16384 + 16384) AS hi
FROM zones) spans WHERE lo IS NOT NULL`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE ioc_expiry_zones`)
	})
}
