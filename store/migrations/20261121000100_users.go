package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `
CREATE TABLE users (
	id {id},
	username TEXT NOT NULL UNIQUE,
	password_hash TEXT NOT NULL,
	scope TEXT NOT NULL CHECK (scope IN ('root', 'tenant')),
	tenant_id TEXT,
	created_at {ts} NOT NULL
)`, `
CREATE TABLE api_keys (
	id {id},
	user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	name TEXT NOT NULL,
	prefix TEXT NOT NULL,
	hash TEXT NOT NULL,
	created_at {ts} NOT NULL,
	last_used_at {ts},
	revoked_at {ts}
)`,
			`CREATE INDEX api_keys_user_idx ON api_keys (user_id)`, `
CREATE TABLE sessions (
	token_hash TEXT PRIMARY KEY,
	user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	created_at {ts} NOT NULL,
	expires_at {ts} NOT NULL
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE sessions`, `DROP TABLE api_keys`, `DROP TABLE users`)
	})
}
