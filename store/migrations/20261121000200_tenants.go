package migrations

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// One organisation per installation: its id is drawn once, here, so
		// that two installations reporting to one MSSP never share an org_id.
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		stmts := []string{`
CREATE TABLE organisation (
	id TEXT PRIMARY KEY,
	created_at {ts} NOT NULL
)`,
			`INSERT INTO organisation (id, created_at) VALUES ('` + hex.EncodeToString(b) + `', CURRENT_TIMESTAMP)`, `
CREATE TABLE tenant_groups (
	id TEXT PRIMARY KEY,
	seq BIGINT NOT NULL UNIQUE,
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
	created_at {ts} NOT NULL,
	updated_at {ts} NOT NULL
)`,
			`CREATE INDEX tenants_group_idx ON tenants (group_id)`,
		}
		if db.Dialect().Name() == dialect.PG {
			// Creation order under concurrent inserts; SQLite has one writer
			// and takes MAX(seq)+1 inside the write transaction instead.
			stmts = append(stmts, `CREATE SEQUENCE tenants_seq`, `CREATE SEQUENCE tenant_groups_seq`)
		}
		return exec(ctx, db, stmts...)
	}, func(ctx context.Context, db *bun.DB) error {
		stmts := []string{`DROP TABLE tenants`, `DROP TABLE tenant_groups`, `DROP TABLE organisation`}
		if db.Dialect().Name() == dialect.PG {
			stmts = append(stmts, `DROP SEQUENCE tenants_seq`, `DROP SEQUENCE tenant_groups_seq`)
		}
		return exec(ctx, db, stmts...)
	})
}
