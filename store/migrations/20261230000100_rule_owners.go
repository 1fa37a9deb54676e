package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// A rule's sid belongs to the feed whose text is stored while that
		// feed reports it (docs/decisions.md, "Who owns a Suricata sid"):
		// ioc_texts.feed_id is that feed. The texts stored before were the
		// last writer's, which is not known; a rule reported by one feed
		// (its inline sighting) is that feed's, the others are claimed by
		// the next feed that reports them. Deleting a feed releases its
		// sids; the index serves that and the export's join.
		//
		// feeds.allow_rule_actions lets the rules of a feed keep an action
		// other than alert in the export.
		return exec(ctx, db,
			`ALTER TABLE ioc_texts ADD COLUMN feed_id BIGINT REFERENCES feeds (id) ON DELETE SET NULL`,
			`UPDATE ioc_texts SET feed_id = (SELECT i.feed_id FROM iocs i WHERE i.id = ioc_texts.ioc_id)`,
			`CREATE INDEX ioc_texts_feed_idx ON ioc_texts (feed_id)`,
			`ALTER TABLE feeds ADD COLUMN allow_rule_actions BOOLEAN NOT NULL DEFAULT FALSE`)
	}, func(ctx context.Context, db *bun.DB) error {
		stmts := []string{`ALTER TABLE feeds DROP COLUMN allow_rule_actions`, `DROP INDEX ioc_texts_feed_idx`}
		if db.Dialect().Name() == dialect.PG {
			return exec(ctx, db, append(stmts, `ALTER TABLE ioc_texts DROP COLUMN feed_id`)...)
		}
		// SQLite drops no column a foreign key uses: the table is rebuilt.
		return exec(ctx, db, append(stmts, `
CREATE TABLE ioc_texts_down (
	ioc_id BIGINT PRIMARY KEY REFERENCES iocs (id) ON DELETE CASCADE,
	text TEXT NOT NULL
)`, `INSERT INTO ioc_texts_down (ioc_id, text) SELECT ioc_id, text FROM ioc_texts`,
			`DROP TABLE ioc_texts`, `ALTER TABLE ioc_texts_down RENAME TO ioc_texts`)...)
	})
}
