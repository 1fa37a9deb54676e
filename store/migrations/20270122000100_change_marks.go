package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// ioc_stats.changes counts the change stamps taken, one an IoC row
		// written, moved with the last stamp in one statement; each writing
		// transaction marks both as it ends (ioc_change_marks). How many
		// IoCs changed since a stamp is then at most the changes since the
		// last mark at or below it: two rows, where counting the IoCs
		// changed since walked iocs_changed_idx, 45-60 ms of a page after
		// each batch during an ingest at 1,000,000 IoCs on PostgreSQL.
		// The first mark is the stamp now, every IoC before it uncounted.
		return exec(ctx, db, `ALTER TABLE ioc_stats ADD COLUMN changes BIGINT NOT NULL DEFAULT 0`,
			`CREATE TABLE ioc_change_marks (
	stamp BIGINT PRIMARY KEY,
	changes BIGINT NOT NULL
){norowid}`,
			`INSERT INTO ioc_change_marks (stamp, changes) SELECT stamp, 0 FROM ioc_stats WHERE id = 1`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE ioc_change_marks`, `ALTER TABLE ioc_stats DROP COLUMN changes`)
	})
}
