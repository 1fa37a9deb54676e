// Row helpers the records share: opaque ids, row locks, creation numbers
// and the organisation id.

package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/uptrace/bun"
)

// newOpaqueID returns 128 random bits in hex: unguessable, fixed length,
// safe in a URL path without escaping, and revealing no order or count.
func newOpaqueID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("store: crypto/rand failed: " + err.Error()) // unrecoverable on any supported OS
	}
	return hex.EncodeToString(b)
}

// forUpdate locks the selected rows on PostgreSQL. SQLite needs no row
// locks: its write transactions take the database lock at BEGIN.
func (s *Store) forUpdate(q *bun.SelectQuery) *bun.SelectQuery {
	if s.Dialect == Postgres {
		return q.For("UPDATE")
	}
	return q
}

// nextSeq returns the next creation number of table (tenants or
// tenant_groups): a sequence on PostgreSQL, MAX+1 under SQLite's single
// writer.
func (s *Store) nextSeq(ctx context.Context, db bun.IDB, table string) (int64, error) {
	q := "SELECT COALESCE(MAX(seq), 0) + 1 FROM " + table
	if s.Dialect == Postgres {
		q = "SELECT nextval('" + table + "_seq')"
	}
	var n int64
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: unable to number a new row of %s: %w", table, err)
	}
	return n, nil
}

// OrgID returns the installation's organisation id.
func (s *Store) OrgID(ctx context.Context) (string, error) {
	return orgID(ctx, s.DB)
}

func orgID(ctx context.Context, db bun.IDB) (string, error) {
	var id string
	if err := db.QueryRowContext(ctx, "SELECT id FROM organisation").Scan(&id); err != nil {
		return "", fmt.Errorf("store: unable to read the organisation id: %w", err)
	}
	return id, nil
}
