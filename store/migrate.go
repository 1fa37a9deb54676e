package store

import (
	"context"
	"fmt"

	"github.com/uptrace/bun/migrate"

	"github.com/tifeeds/tifeeds/store/migrations"
)

// migrateLockID is the PostgreSQL advisory lock that serialises migrations
// when several instances start at once.
const migrateLockID = 0x7466656564730001

// Migrate applies every migration not yet applied and returns their names.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	if s.Dialect == Postgres {
		conn, err := s.DB.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("store: unable to get a connection to migrate: %w", err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(?)", int64(migrateLockID)); err != nil {
			return nil, fmt.Errorf("store: unable to take the migration lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", int64(migrateLockID))
	}
	m := migrate.NewMigrator(s.DB, migrations.Migrations, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to prepare the migrations table: %w", err)
	}
	group, err := m.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: unable to migrate: %w", err)
	}
	var names []string
	for _, mig := range group.Migrations {
		names = append(names, mig.Name+"_"+mig.Comment)
	}
	return names, nil
}
