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
		// SQLite: no index. A table of (tag, IoC) kept by triggers read a
		// rare tag in 19 ms instead of 170 ms, but cost the ingestion about
		// a fifth of its rate (0.25-0.28 -> 0.21-0.22 of .import in A/B runs
		// under load), below its 0.5 floor (docs/benchmarks.md).
		return nil
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			return exec(ctx, db, `DROP INDEX iocs_tags_idx`)
		}
		return nil
	})
}
