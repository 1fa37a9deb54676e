package store_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// The checkpointer copies what commits leave in the WAL into the database
// file by itself: the store's own commits never checkpoint a small WAL.
func TestSQLiteCheckpointer(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cp.db")
	st, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB.ExecContext(ctx, "CREATE TABLE filler (v TEXT)"); err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	row := strings.Repeat("x", 1000)
	tx, err := st.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 4000 { // about 4 MB, some 1,000 pages: far below the backstop
		if _, err := tx.ExecContext(ctx, "INSERT INTO filler VALUES (?)", row); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Checkpointing is asynchronous: wait for the database file to take
	// the pages (a deadline far beyond the checkpointer's interval).
	deadline := time.Now().Add(30 * time.Second)
	for size() < before+4_000_000 {
		if time.Now().After(deadline) {
			t.Fatalf("database file %d bytes after the commit (%d before): the WAL was not checkpointed", size(), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- st.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return: the checkpointer did not stop")
	}
}

// The writing connection has a page cache of its own size, large enough
// for a batch's pages (docs/benchmarks.md); reading ones keep theirs.
func TestSQLiteCacheSizes(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var writer, reader int
	if err := st.DB.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&writer); err != nil {
		t.Fatal(err)
	}
	if err := store.Reader(st).QueryRowContext(ctx, "PRAGMA cache_size").Scan(&reader); err != nil {
		t.Fatal(err)
	}
	// Negative: KiB.
	if writer != -32<<10 || reader != -16<<10 {
		t.Errorf("cache_size = %d on the writer, %d on a reader; want %d and %d", writer, reader, -32<<10, -16<<10)
	}
}

// An in-memory database has no WAL and no checkpointer; closing it works.
func TestSQLiteMemoryClose(t *testing.T) {
	st, err := store.Open(context.Background(), "sqlite::memory:")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSQLiteFilesPrivate: the database, its -wal and -shm files and the
// secrets key file we create are readable by tifeeds' user alone, and so is
// the data directory we create.
func TestSQLiteFilesPrivate(t *testing.T) {
	t.Setenv(store.SecretKeyEnv, "") // the key file is made only without it
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "tifeeds.db")
	st, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.LoadSecrets("sqlite:" + path); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600,
		filepath.Join(dir, "secret.key"): 0o600}
	for name, mode := range want {
		fi, err := os.Stat(name)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(name), err)
			continue
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s: mode %#o, want %#o", filepath.Base(name), got, mode)
		}
	}
}

// The store's PostgreSQL connections plan without parallel workers or JIT
// (pagePlanSettings) unless the DSN says otherwise; exports keep the
// server's settings.
func TestPostgresPlanSettings(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.NewPostgresDSN(t)
	show := func(db interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}, name string) string {
		t.Helper()
		var v string
		if err := db.QueryRowContext(ctx, "SHOW "+name).Scan(&v); err != nil {
			t.Fatalf("SHOW %s: %v", name, err)
		}
		return v
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if jit, workers := show(store.Reader(st), "jit"), show(store.Reader(st), "max_parallel_workers_per_gather"); jit != "off" || workers != "0" {
		t.Errorf("reader: jit %s, max_parallel_workers_per_gather %s; want off and 0", jit, workers)
	}
	plain, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if jit, server := show(store.Exporter(st), "jit"), show(plain, "jit"); jit != server {
		t.Errorf("exports: jit %s, want the server's %s", jit, server)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("jit", "on")
	q.Set("max_parallel_workers_per_gather", "1")
	u.RawQuery = q.Encode()
	set, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if jit, workers := show(set.DB, "jit"), show(set.DB, "max_parallel_workers_per_gather"); jit != "on" || workers != "1" {
		t.Errorf("with the DSN's settings: jit %s, max_parallel_workers_per_gather %s; want on and 1", jit, workers)
	}
}
