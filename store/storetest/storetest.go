// Package storetest runs tests against every database tifeeds supports: a
// fresh SQLite file in t.TempDir() and a fresh PostgreSQL database on the
// server named by TIFEEDS_TEST_POSTGRES (scripts/with-postgres.sh starts
// one). Under CI=true a missing PostgreSQL fails the test instead of
// skipping it.
package storetest

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/store"
)

// PostgresEnv names the variable holding the admin DSN of the test server.
const PostgresEnv = "TIFEEDS_TEST_POSTGRES"

// EachDB runs fn as a subtest per dialect, named "sqlite" and "postgres",
// each on a new, migrated database.
func EachDB(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		fn(t, NewSQLite(t))
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, NewPostgres(t))
	})
}

// NewSQLite returns a migrated store on a new SQLite file.
func NewSQLite(t testing.TB) *store.Store {
	t.Helper()
	s := open(t, "sqlite:"+filepath.Join(t.TempDir(), "tifeeds.db"))
	return s
}

// NewPostgres returns a migrated store on a new PostgreSQL database, dropped
// when the test ends.
func NewPostgres(t testing.TB) *store.Store {
	t.Helper()
	dsn := PostgresDSN(t)
	name := "tifeeds_test_" + strings.ToLower(store.NewSecret(9))
	name = strings.NewReplacer("-", "_").Replace(name)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("open postgres admin connection: %v", err)
	}
	t.Cleanup(func() { admin.Close() })
	if _, err := admin.Exec(`CREATE DATABASE "` + name + `"`); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS "` + name + `" WITH (FORCE)`); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	return open(t, withDatabase(t, dsn, name))
}

// PostgresDSN returns the admin DSN of the test server, skipping the test
// when there is none (failing it under CI=true).
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(PostgresEnv)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: under CI=true the PostgreSQL tests must run (use make test)", PostgresEnv)
		}
		t.Skipf("%s is not set: run through make test to include PostgreSQL", PostgresEnv)
	}
	return dsn
}

// NewPostgresDSN creates a fresh database and returns its DSN, for tests
// that start a whole tifeeds process on it.
func NewPostgresDSN(t testing.TB) string {
	t.Helper()
	s := NewPostgres(t)
	var name string
	if err := s.DB.QueryRow("SELECT current_database()").Scan(&name); err != nil {
		t.Fatalf("current database: %v", err)
	}
	s.Close()
	return withDatabase(t, PostgresDSN(t), name)
}

func withDatabase(t testing.TB, dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}

func open(t testing.TB, dsn string) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

// MustExec runs a statement or fails the test; for fixtures.
func MustExec(t testing.TB, s *store.Store, query string, args ...any) {
	t.Helper()
	if _, err := s.DB.ExecContext(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// HoldConnections takes every connection of st's SQLite pools until release
// (called once or more): the store's statements then wait for one, as
// behind long queries. On PostgreSQL it takes nothing (lock tables there).
func HoldConnections(t testing.TB, st *store.Store) (release func()) {
	t.Helper()
	var conns []*sql.Conn
	var once sync.Once
	release = func() {
		once.Do(func() {
			for _, c := range conns {
				c.Close()
			}
		})
	}
	if st.Dialect == store.Postgres {
		return release
	}
	for _, pool := range st.Pools() {
		for range pool.Stats().MaxOpenConnections {
			c, err := pool.Conn(context.Background())
			if err != nil {
				release()
				t.Fatalf("hold a connection: %v", err)
			}
			conns = append(conns, c)
		}
	}
	return release
}

// HoldWrite starts a write transaction on st that runs statement and then
// waits, holding it (on SQLite, the one writing connection and the write
// lock; on PostgreSQL, the rows it changed), until release, which ends it
// and reports its error.
func HoldWrite(t testing.TB, st *store.Store, statement string, args ...any) (release func()) {
	t.Helper()
	held, end, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- st.RunInTx(context.Background(), func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, statement, args...); err != nil {
				close(held)
				return err
			}
			close(held)
			<-end
			return nil
		})
	}()
	<-held
	var once sync.Once
	return func() {
		once.Do(func() {
			close(end)
			if err := <-done; err != nil {
				t.Errorf("the held write: %v", err)
			}
		})
	}
}
