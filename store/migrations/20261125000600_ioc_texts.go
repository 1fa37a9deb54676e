package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The text of a Rule IoC (one IDS signature, up to a few kB), kept
		// beside iocs rather than in it: the other kinds' rows and their
		// writes stay as they were. The cascade drops the text with its
		// IoC wherever the IoC is deleted (sweeper, revocation, feed reset).
		return exec(ctx, db, `
CREATE TABLE ioc_texts (
	ioc_id BIGINT PRIMARY KEY REFERENCES iocs (id) ON DELETE CASCADE,
	text TEXT NOT NULL
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE ioc_texts`)
	})
}
