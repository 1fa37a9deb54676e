package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// orderKeyTables are the order keys' tables this migration makes
// (store/ioc_keys.go, orderKeyTables); PostgreSQL gives them up for indexes
// on iocs in 20270112000100, SQLite keeps them.
var orderKeyTables = []string{"ioc_score_keys", "ioc_first_seen_keys", "ioc_last_seen_keys", "ioc_expires_keys"}

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		pg := db.Dialect().Name() == dialect.PG
		// The indexes on iocs that only served reads leave the writers'
		// path: each cost a B-tree insert per new IoC in every batch
		// (0.7-1.0 s per 1,000,000 on PostgreSQL). The key indexer keeps
		// their keys in key tables instead (docs/decisions.md, "Order
		// keys"). iocs keeps its primary key, UNIQUE (type, value) and
		// iocs_changed_idx (TAXII's change order, and the changed-since arm
		// of every keyed read).
		stmts := []string{
			`DROP INDEX iocs_first_seen_idx`,
			`DROP INDEX iocs_last_seen_idx`,
			`DROP INDEX iocs_expires_idx`,
			// The score keys take the shape of the other orders' keys.
			`DROP TABLE ioc_score_keys`,
		}
		// A table for each integer-valued order, all of one shape, so that
		// the indexer, the cleaner and the readers have one code path
		// (store/ioc_keys.go, orderKeys). One table with a column naming
		// the order would mix four distributions in the statistics of its
		// key: PostgreSQL then guessed 753,171 expiry keys where none were
		// and walked the table (docs/decisions.md, "Order keys"). stamp is
		// the IoC's changed_at when the key was made; by id, the indexer
		// finds the keys of an IoC that changed, to make them anew.
		for _, table := range orderKeyTables {
			stmts = append(stmts, `CREATE TABLE `+table+` (
	key BIGINT NOT NULL,
	id BIGINT NOT NULL,
	stamp BIGINT NOT NULL,
	PRIMARY KEY (key, id)
) {norowid}`, `CREATE INDEX `+table+`_id_idx ON `+table+` (id)`)
		}
		// The indexer starts over from stamp 0 and makes every key again:
		// the tag and value keys already made stay (their inserts are
		// idempotent). Until it has caught up, pages read the IoCs changed
		// since from iocs, or take the plain query (store.recentKeysMax).
		stmts = append(stmts, `UPDATE ioc_keys_state SET stamp = 0 WHERE id = 1`)
		if pg {
			// PostgreSQL's tag filter goes through tag keys as SQLite's
			// does: one model, and no GIN index for the writers to keep.
			// Byte order for the tags, as SQLite compares them.
			stmts = append(stmts, `DROP INDEX iocs_tags_idx`, `CREATE TABLE ioc_tag_keys (
	tag {ctext} NOT NULL,
	id BIGINT NOT NULL,
	stamp BIGINT NOT NULL,
	PRIMARY KEY (tag, id)
)`)
		}
		return exec(ctx, db, stmts...)
	}, func(ctx context.Context, db *bun.DB) error {
		stmts := []string{
			`CREATE INDEX iocs_expires_idx ON iocs (expires_at, id)`,
			`CREATE INDEX iocs_last_seen_idx ON iocs (last_seen, id)`,
			`CREATE INDEX iocs_first_seen_idx ON iocs (first_seen, id)`,
			`DROP TABLE ioc_first_seen_keys`,
			`DROP TABLE ioc_last_seen_keys`,
			`DROP TABLE ioc_expires_keys`,
			`DROP TABLE ioc_score_keys`,
			`CREATE TABLE ioc_score_keys (
	score INTEGER NOT NULL,
	id BIGINT NOT NULL,
	stamp BIGINT NOT NULL,
	PRIMARY KEY (score, id)
) {norowid}`,
			// The score keys are made again from the start.
			`UPDATE ioc_keys_state SET stamp = 0 WHERE id = 1`,
		}
		if db.Dialect().Name() == dialect.PG {
			stmts = append(stmts, `DROP TABLE ioc_tag_keys`, `CREATE INDEX iocs_tags_idx ON iocs USING GIN (tags jsonb_path_ops)`)
		}
		return exec(ctx, db, stmts...)
	})
}
