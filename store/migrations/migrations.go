// Package migrations holds the versioned schema of tifeeds' database. Each
// file is one migration, named by its version; each runs in a transaction and
// is written once for both SQLite and PostgreSQL.
package migrations

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// Migrations is every migration, in version order.
var Migrations = migrate.NewMigrations()

// exec runs the statements in one transaction after replacing the dialect
// placeholders:
//
//	{id}    auto-increment 64-bit primary key
//	{ts}    timestamp with time zone
//	{json}  JSON document (TEXT on SQLite, JSONB on PostgreSQL)
//	{blob}  binary
//	{ctext} text compared byte by byte (COLLATE "C" on PostgreSQL, SQLite's default)
//	{norowid} after a CREATE TABLE's ")": WITHOUT ROWID on SQLite (the primary key is the table)
func exec(ctx context.Context, db *bun.DB, stmts ...string) error {
	r := dialectSQL(db)
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, stmt := range stmts {
			if _, err := tx.ExecContext(ctx, r.Replace(stmt)); err != nil {
				return fmt.Errorf("migration statement %q: %w", firstLine(stmt), err)
			}
		}
		return nil
	})
}

// dialectSQL replaces exec's dialect placeholders in db's dialect, for a
// migration that runs its statements itself.
func dialectSQL(db *bun.DB) *strings.Replacer {
	if db.Dialect().Name() == dialect.PG {
		return strings.NewReplacer("{id}", "BIGSERIAL PRIMARY KEY", "{ts}", "TIMESTAMPTZ", "{json}", "JSONB", "{blob}", "BYTEA", "{ctext}", `TEXT COLLATE "C"`, "{norowid}", "")
	}
	return strings.NewReplacer("{id}", "INTEGER PRIMARY KEY AUTOINCREMENT", "{ts}", "TIMESTAMP", "{json}", "TEXT", "{blob}", "BLOB", "{ctext}", "TEXT", "{norowid}", "WITHOUT ROWID")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
