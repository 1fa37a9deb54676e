package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The Overview page's counts of the IoCs, kept by the writers of
		// iocs and sighting_rows in the transaction of each change, so
		// that reading them scans neither (issue 29): IoCs per type, per
		// feed (an inline sighting, or any rows of the feed), per tag and
		// per UTC day of expiry (numbered from 1970-01-01). A key whose
		// count falls to 0 loses its row. They are filled here from the
		// stored IoCs: a one-time scan at the upgrade, about as long as
		// one recount of the overview was (docs/decisions.md).
		// Tags as store.tagRows reads them: a JSON null has none (SQLite's
		// json_each yields a NULL tag for it, PostgreSQL's
		// jsonb_array_elements_text fails on it).
		tags := `SELECT j.value, count(*) FROM iocs JOIN json_each(iocs.tags) j ON j.type = 'text' GROUP BY 1`
		if db.Dialect().Name() == dialect.PG {
			tags = `SELECT t, count(*) FROM iocs
	CROSS JOIN jsonb_array_elements_text(CASE jsonb_typeof(iocs.tags) WHEN 'array' THEN iocs.tags END) t GROUP BY 1`
		}
		return exec(ctx, db,
			`CREATE TABLE ioc_count_types (
	type TEXT PRIMARY KEY,
	n BIGINT NOT NULL
){norowid}`,
			`CREATE TABLE ioc_count_feeds (
	feed_id BIGINT PRIMARY KEY,
	n BIGINT NOT NULL
){norowid}`,
			`CREATE TABLE ioc_count_tags (
	tag {ctext} PRIMARY KEY,
	n BIGINT NOT NULL
){norowid}`,
			// The top tags, and the rows fallen to 0, without a sort.
			`CREATE INDEX ioc_count_tags_n_idx ON ioc_count_tags (n DESC, tag)`,
			`CREATE TABLE ioc_count_expiry (
	day BIGINT PRIMARY KEY,
	n BIGINT NOT NULL
){norowid}`,
			`INSERT INTO ioc_count_types (type, n) SELECT type, count(*) FROM iocs GROUP BY type`,
			`INSERT INTO ioc_count_feeds (feed_id, n) SELECT feed_id, sum(n) FROM (
	SELECT feed_id, count(*) AS n FROM iocs WHERE feed_id IS NOT NULL GROUP BY feed_id
	UNION ALL SELECT feed_id, count(DISTINCT ioc_id) FROM sighting_rows GROUP BY feed_id) AS c
GROUP BY feed_id`,
			`INSERT INTO ioc_count_tags (tag, n) `+tags,
			`INSERT INTO ioc_count_expiry (day, n) SELECT expires_at / 86400000000, count(*) FROM iocs GROUP BY 1`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db,
			`DROP TABLE ioc_count_expiry`,
			`DROP TABLE ioc_count_tags`,
			`DROP TABLE ioc_count_feeds`,
			`DROP TABLE ioc_count_types`)
	})
}
