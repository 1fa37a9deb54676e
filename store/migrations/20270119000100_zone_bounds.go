package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// Each expiry zone keeps the earliest and latest first sighting,
		// last sighting and score among its IoCs too: a page of an expiry
		// range in one of those orders reads the zones in the order of
		// their bounds and stops at the first zone that cannot hold an IoC
		// of the page, where the walk of the order met the range's IoCs
		// after every other (store/ioc_expiry_zones.go). Filled here from
		// every IoC, one walk of each zone's range of the primary key, with
		// the zones the key indexer had not made yet. A zone
		// row inserted without these (by an older version) takes the
		// widest bounds, which hold any IoC.
		return exec(ctx, db,
			`DELETE FROM ioc_expiry_zones WHERE NOT EXISTS (SELECT 1 FROM iocs WHERE iocs.id >= ioc_expiry_zones.zone * 16384 AND iocs.id < ioc_expiry_zones.zone * 16384 + 16384)`,
			`ALTER TABLE ioc_expiry_zones ADD COLUMN first_lo BIGINT NOT NULL DEFAULT -4611686018427387904`,
			`ALTER TABLE ioc_expiry_zones ADD COLUMN first_hi BIGINT NOT NULL DEFAULT 4611686018427387904`,
			`ALTER TABLE ioc_expiry_zones ADD COLUMN last_lo BIGINT NOT NULL DEFAULT -4611686018427387904`,
			`ALTER TABLE ioc_expiry_zones ADD COLUMN last_hi BIGINT NOT NULL DEFAULT 4611686018427387904`,
			`ALTER TABLE ioc_expiry_zones ADD COLUMN score_lo BIGINT NOT NULL DEFAULT -4611686018427387904`,
			`ALTER TABLE ioc_expiry_zones ADD COLUMN score_hi BIGINT NOT NULL DEFAULT 4611686018427387904`,
			`UPDATE ioc_expiry_zones SET (lo, hi, first_lo, first_hi, last_lo, last_hi, score_lo, score_hi) = (SELECT
	min(expires_at + 0), max(expires_at + 0), min(first_seen + 0), max(first_seen + 0),
	min(last_seen + 0), max(last_seen + 0), min(score + 0), max(score + 0)
FROM iocs WHERE iocs.id >= ioc_expiry_zones.zone * 16384 AND iocs.id < ioc_expiry_zones.zone * 16384 + 16384)`,
			// The zones of IoCs the key indexer had not come to: from now
			// on the writers widen the zones, not the indexer.
			`INSERT INTO ioc_expiry_zones (zone, lo, hi, first_lo, first_hi, last_lo, last_hi, score_lo, score_hi)
WITH RECURSIVE zones (zone) AS (
	SELECT CAST(0 AS BIGINT) UNION ALL SELECT zone + 1 FROM zones WHERE zone < (SELECT coalesce(max(id), 0) FROM iocs) / 16384
)
SELECT zone, lo, hi, first_lo, first_hi, last_lo, last_hi, score_lo, score_hi FROM (SELECT zone,
	(SELECT min(expires_at + 0) FROM iocs WHERE id >= zone * 16384 AND id < zone * 16384 + 16384) AS lo,
	(SELECT max(expires_at + 0) FROM iocs WHERE id >= zone * 16384 AND id < zone * 16384 + 16384) AS hi,
	(SELECT min(first_seen + 0) FROM iocs WHERE id >= zone * 16384 AND id < zone * 16384 + 16384) AS first_lo,
	(SELECT max(first_seen + 0) FROM iocs WHERE id >= zone * 16384 AND id < zone * 16384 + 16384) AS first_hi,
	(SELECT min(last_seen + 0) FROM iocs WHERE id >= zone * 16384 AND id < zone * 16384 + 16384) AS last_lo,
	(SELECT max(last_seen + 0) FROM iocs WHERE id >= zone * 16384 AND id < zone * 16384 + 16384) AS last_hi,
	(SELECT min(score + 0) FROM iocs WHERE id >= zone * 16384 AND id < zone * 16384 + 16384) AS score_lo,
	(SELECT max(score + 0) FROM iocs WHERE id >= zone * 16384 AND id < zone * 16384 + 16384) AS score_hi
FROM zones WHERE NOT EXISTS (SELECT 1 FROM ioc_expiry_zones z WHERE z.zone = zones.zone)) spans WHERE lo IS NOT NULL`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db,
			`ALTER TABLE ioc_expiry_zones DROP COLUMN first_lo`,
			`ALTER TABLE ioc_expiry_zones DROP COLUMN first_hi`,
			`ALTER TABLE ioc_expiry_zones DROP COLUMN last_lo`,
			`ALTER TABLE ioc_expiry_zones DROP COLUMN last_hi`,
			`ALTER TABLE ioc_expiry_zones DROP COLUMN score_lo`,
			`ALTER TABLE ioc_expiry_zones DROP COLUMN score_hi`)
	})
}
