package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.PG {
			return nil
		}
		// The sample of the value keys that searches choose their trigrams
		// by (store/search_trigrams.go), kept in the database: a process
		// that started had none until it had taken its own, 0.1-0.3 s at
		// 10,000,000 IoCs and far more with the disk cold, and a search
		// meanwhile intersected every trigram's posting list (0.85-1.4 s
		// a first search after PostgreSQL started). One row; the forms
		// are a JSON array of strings.
		return exec(ctx, db, `CREATE TABLE search_trigram_sample (
	id INTEGER PRIMARY KEY,
	taken TIMESTAMPTZ NOT NULL,
	forms TEXT NOT NULL
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.PG {
			return nil
		}
		return exec(ctx, db, `DROP TABLE search_trigram_sample`)
	})
}
