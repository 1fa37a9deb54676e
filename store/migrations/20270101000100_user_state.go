package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// A disabled user signs in with nothing (liveUserCond); a user whose
		// password root reset must choose a new one at the next sign-in.
		return exec(ctx, db,
			`ALTER TABLE users ADD COLUMN enabled BOOLEAN NOT NULL DEFAULT TRUE`,
			`ALTER TABLE users ADD COLUMN must_change_password BOOLEAN NOT NULL DEFAULT FALSE`,
			`ALTER TABLE users ADD COLUMN last_sign_in_at {ts}`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db,
			`ALTER TABLE users DROP COLUMN last_sign_in_at`,
			`ALTER TABLE users DROP COLUMN must_change_password`,
			`ALTER TABLE users DROP COLUMN enabled`)
	})
}
