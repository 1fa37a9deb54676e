package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `
-- One row: what readers derive cheaply instead of scanning iocs. The
-- writers of iocs (store/batch.go, store/sweep.go) move it in the
-- transaction of their change: version for exports' ETag, changed_at
-- (unix microseconds) for Last-Modified, ioc_count for an unfiltered
-- totalCount. The sweeper re-counts ioc_count exactly on each pass.
CREATE TABLE ioc_stats (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	version BIGINT NOT NULL,
	changed_at BIGINT NOT NULL,
	ioc_count BIGINT NOT NULL
)`,
			`INSERT INTO ioc_stats (id, version, changed_at, ioc_count) SELECT 1, 1, 0, count(*) FROM iocs`,
			// The dashboard's default order, most recently seen first. New
			// IoCs append to it, so ingestion does not notice; indexes per
			// value, type or score did (SQLite ingest 0.52 → 0.29–0.36 of
			// sqlite3 .import: docs/decisions.md, "Read paths").
			`CREATE INDEX iocs_last_seen_idx ON iocs (last_seen, id)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP INDEX iocs_last_seen_idx`, `DROP TABLE ioc_stats`)
	})
}
