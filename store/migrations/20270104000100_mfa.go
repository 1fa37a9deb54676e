package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// MFA with TOTP (issue 26, point 3). The secrets are sealed
		// (store.Secrets); mfa_pending_secret waits for the first code of an
		// enrolment; mfa_last_step is the last TOTP step accepted, so a code
		// is taken once, whichever instance sees it. Recovery codes and
		// sign-in challenges are kept as SHA-256 hashes of random tokens.
		return exec(ctx, db,
			`ALTER TABLE users ADD COLUMN mfa_enabled BOOLEAN NOT NULL DEFAULT FALSE`,
			`ALTER TABLE users ADD COLUMN mfa_secret {blob}`,
			`ALTER TABLE users ADD COLUMN mfa_pending_secret {blob}`,
			`ALTER TABLE users ADD COLUMN mfa_last_step BIGINT NOT NULL DEFAULT 0`,
			`CREATE TABLE mfa_recovery_codes (
	user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	code_hash TEXT NOT NULL,
	PRIMARY KEY (user_id, code_hash)
)`,
			`CREATE TABLE mfa_challenges (
	token_hash TEXT PRIMARY KEY,
	user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	enrol BOOLEAN NOT NULL,
	created_at {ts} NOT NULL,
	expires_at {ts} NOT NULL,
	attempts INTEGER NOT NULL DEFAULT 0
)`,
			`CREATE INDEX mfa_challenges_user ON mfa_challenges (user_id, created_at)`,
			`CREATE INDEX mfa_challenges_expires ON mfa_challenges (expires_at)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db,
			`DROP TABLE mfa_challenges`,
			`DROP TABLE mfa_recovery_codes`,
			`ALTER TABLE users DROP COLUMN mfa_last_step`,
			`ALTER TABLE users DROP COLUMN mfa_pending_secret`,
			`ALTER TABLE users DROP COLUMN mfa_secret`,
			`ALTER TABLE users DROP COLUMN mfa_enabled`)
	})
}
