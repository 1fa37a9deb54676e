package migrations

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
)

// The rebuild keeps every sighting and the feed index, and takes the
// foreign key away (or back, going down).
func TestRebuildSightingsSQLite(t *testing.T) {
	ctx := context.Background()
	sqldb, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "m.db")+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()
	if err := exec(ctx, db, `CREATE TABLE feeds (id INTEGER PRIMARY KEY)`, `INSERT INTO feeds (id) VALUES (1), (2)`,
		sightingsSQLite("sightings", true), `CREATE INDEX sightings_feed_idx ON sightings (feed_id, expires_at, ioc_id)`,
		`INSERT INTO sightings VALUES (10, 1, 's', 50, '["a"]', 1, 2, 3), (10, 2, 's', 60, NULL, 4, 5, 6), (11, 2, 't', 70, '[]', 7, 8, 9)`); err != nil {
		t.Fatal(err)
	}
	want := rows(t, db)
	for _, feedKey := range []bool{false, true} {
		if err := rebuildSightingsSQLite(ctx, db, feedKey); err != nil {
			t.Fatal(err)
		}
		if got := rows(t, db); got != want {
			t.Errorf("feed key %v: sightings %q, want %q", feedKey, got, want)
		}
		var keys, indexes int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_list('sightings')`).Scan(&keys); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'sightings_feed_idx'`).Scan(&indexes); err != nil {
			t.Fatal(err)
		}
		if (keys == 1) != feedKey || indexes != 1 {
			t.Errorf("feed key %v: %d foreign keys, %d feed indexes", feedKey, keys, indexes)
		}
	}
	// Back with the key, it holds again.
	if _, err := db.ExecContext(ctx, `INSERT INTO sightings VALUES (12, 3, 's', 1, NULL, 1, 1, 1)`); err == nil {
		t.Error("a sighting of no feed went in after the key came back")
	}
}

func rows(t *testing.T, db *bun.DB) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRowContext(context.Background(), `SELECT group_concat(ioc_id || ',' || feed_id || ',' || source || ',' || score || ','
	|| coalesce(tags, 'NULL') || ',' || first_seen || ',' || last_seen || ',' || expires_at, ';') FROM (SELECT * FROM sightings ORDER BY 1, 2, 3)`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s.String
}
