package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `
CREATE TABLE tenant_groups (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	logo TEXT NOT NULL DEFAULT '',
	org_id TEXT NOT NULL,
	created_at {ts} NOT NULL,
	updated_at {ts} NOT NULL
)`, `
CREATE TABLE tenants (
	id TEXT PRIMARY KEY,
	seq BIGINT NOT NULL UNIQUE,
	name TEXT NOT NULL,
	contact TEXT NOT NULL DEFAULT '',
	contact_email TEXT NOT NULL DEFAULT '',
	contact_phone TEXT NOT NULL DEFAULT '',
	address TEXT NOT NULL DEFAULT '',
	info TEXT NOT NULL DEFAULT '',
	retention_group TEXT NOT NULL DEFAULT '',
	mfa_enabled BOOLEAN NOT NULL DEFAULT FALSE,
	authentication_method TEXT NOT NULL DEFAULT 'system_default',
	sso_config {json},
	ingestion_limit BIGINT,
	org_id TEXT NOT NULL,
	group_id TEXT REFERENCES tenant_groups (id) ON DELETE SET NULL,
	ds_num INTEGER NOT NULL DEFAULT 0,
	user_num INTEGER NOT NULL DEFAULT 0,
	created_at {ts} NOT NULL,
	updated_at {ts} NOT NULL
)`,
			`CREATE INDEX tenants_group_idx ON tenants (group_id)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE tenants`, `DROP TABLE tenant_groups`)
	})
}
