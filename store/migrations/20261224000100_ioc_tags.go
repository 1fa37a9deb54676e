package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			// A tag filter (tags @> '["x"]') read through the index when
			// the tag is rare. jsonb_path_ops: one hashed key per tag, the
			// smallest GIN; it costs ingestion ~0.7 s per 1,000,000 new
			// IoCs (docs/benchmarks.md).
			return exec(ctx, db, `CREATE INDEX iocs_tags_idx ON iocs USING GIN (tags jsonb_path_ops)`)
		}
		// SQLite cannot index into JSON: one row per (tag, IoC), kept by
		// triggers so that every writer of iocs (batches, sweeper, feed
		// reset, any later one) keeps it without knowing of it. Read only
		// for a rare tag (store/iocs_query.go); a tag on most IoCs is read
		// by probing tags in the page's order.
		return exec(ctx, db, `
CREATE TABLE ioc_tags (
	tag TEXT NOT NULL,
	ioc_id INTEGER NOT NULL,
	PRIMARY KEY (tag, ioc_id)
) WITHOUT ROWID`,
			`INSERT OR IGNORE INTO ioc_tags (tag, ioc_id) SELECT j.value, i.id FROM iocs i, json_each(i.tags) j`,
			`CREATE TRIGGER iocs_tags_insert AFTER INSERT ON iocs WHEN new.tags IS NOT NULL AND new.tags <> '[]' BEGIN
	INSERT OR IGNORE INTO ioc_tags (tag, ioc_id) SELECT value, new.id FROM json_each(new.tags);
END`,
			`CREATE TRIGGER iocs_tags_update AFTER UPDATE OF tags ON iocs WHEN old.tags IS NOT new.tags BEGIN
	DELETE FROM ioc_tags WHERE ioc_id = old.id AND tag IN (SELECT value FROM json_each(old.tags));
	INSERT OR IGNORE INTO ioc_tags (tag, ioc_id) SELECT value, new.id FROM json_each(new.tags);
END`,
			`CREATE TRIGGER iocs_tags_delete AFTER DELETE ON iocs WHEN old.tags IS NOT NULL AND old.tags <> '[]' BEGIN
	DELETE FROM ioc_tags WHERE ioc_id = old.id AND tag IN (SELECT value FROM json_each(old.tags));
END`)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			return exec(ctx, db, `DROP INDEX iocs_tags_idx`)
		}
		return exec(ctx, db, `DROP TRIGGER iocs_tags_delete`, `DROP TRIGGER iocs_tags_update`,
			`DROP TRIGGER iocs_tags_insert`, `DROP TABLE ioc_tags`)
	})
}
