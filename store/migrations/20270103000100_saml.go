package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// SAML sign-in state shared by every instance: the AuthnRequests
		// issued (so any instance can finish a sign-in another started),
		// and the assertions used (each once). Both expire and are swept
		// on insert; no foreign key: a row outlives nothing it names.
		return exec(ctx, db, `
CREATE TABLE saml_requests (
	id TEXT PRIMARY KEY,
	tenant_id TEXT NOT NULL,
	expires_at {ts} NOT NULL
)`,
			`CREATE INDEX saml_requests_tenant ON saml_requests (tenant_id, expires_at)`,
			`CREATE INDEX saml_requests_expires ON saml_requests (expires_at)`,
			`
CREATE TABLE saml_assertions (
	tenant_id TEXT NOT NULL,
	assertion_id TEXT NOT NULL,
	expires_at {ts} NOT NULL,
	PRIMARY KEY (tenant_id, assertion_id)
)`,
			`CREATE INDEX saml_assertions_expires ON saml_assertions (expires_at)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE saml_assertions`, `DROP TABLE saml_requests`)
	})
}
