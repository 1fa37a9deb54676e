package store_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/migrations"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// Migration 20261228000100 goes down to the indexes on iocs and the score
// keys, and up again to the order keys, on a store with IoCs; each way the
// key tables start over, and pages answer after the indexer caught up. On
// PostgreSQL migration 20270112000100 goes down first, back to the order
// keys' tables, and up last, to the orders' indexes on iocs.
func TestOrderKeysMigrationGoesBothWays(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		pg := s.Dialect == store.Postgres
		feed := newFeed(t, s, "f")
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("a.example", "s", 10, "x"), dom("b.example", "s", 90, "x", "y")}})
		if _, err := s.CatchUpKeys(ctx, 100); err != nil {
			t.Fatal(err)
		}
		// The indexes on iocs but its keys and, on PostgreSQL, a later
		// migration's (20270123000100), which these do not touch.
		indexes := func() []string {
			return slices.DeleteFunc(iocIndexes(t, s), func(name string) bool { return name == "iocs_expiry_day_value_idx" })
		}
		// wentDown checks the store after migration name went down: the
		// indexes on iocs it left, no score keys until an indexer runs,
		// the keys' stamp back to 0.
		wentDown := func(name string, want []string) {
			t.Helper()
			if got := indexes(); !slices.Equal(got, want) {
				t.Errorf("indexes on iocs after %s went down: %q, want %q", name, got, want)
			}
			if n := countRows(t, s, "ioc_score_keys"); n != 0 {
				t.Errorf("%d score keys after %s went down, want none until an indexer runs", n, name)
			}
			if n := countRows(t, s, "ioc_keys_state WHERE stamp = 0"); n != 1 {
				t.Errorf("the keys' stamp was not reset when %s went down", name)
			}
		}
		onlyKeys := []string{"iocs_changed_idx", "iocs_feed_idx"}
		pgm, pgMig := migration(t, s, "20270112000100")
		if pg {
			if err := pgMig.Down(ctx, pgm, pgMig); err != nil {
				t.Fatal(err)
			}
			wentDown("20270112000100", onlyKeys)
		}
		m, mig := migration(t, s, "20261228000100")
		if err := mig.Down(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		// iocs_feed_idx is a later migration's (20261229000100).
		want := []string{"iocs_changed_idx", "iocs_expires_idx", "iocs_feed_idx", "iocs_first_seen_idx", "iocs_last_seen_idx"}
		if pg {
			want = append(want, "iocs_tags_idx")
		}
		wentDown("20261228000100", want)

		if err := mig.Up(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if got := indexes(); !slices.Equal(got, onlyKeys) {
			t.Errorf("indexes on iocs after going up: %q", got)
		}
		if n := countRows(t, s, "ioc_keys_state WHERE stamp = 0"); n != 1 {
			t.Error("the keys' stamp was not reset going up")
		}
		if pg {
			if err := pgMig.Up(ctx, pgm, pgMig); err != nil {
				t.Fatal(err)
			}
			want := []string{"iocs_changed_idx", "iocs_expires_idx", "iocs_feed_idx", "iocs_first_seen_idx", "iocs_last_seen_idx", "iocs_score_idx"}
			if got := indexes(); !slices.Equal(got, want) {
				t.Errorf("indexes on iocs after 20270112000100 went up: %q, want %q", got, want)
			}
		}
		if _, err := s.CatchUpKeys(ctx, 100); err != nil {
			t.Fatal(err)
		}
		if n := orderKeyCount(t, s, ""); n != 4*2 && !pg {
			t.Errorf("%d order keys after catching up, want 4 × 2", n)
		}
		page, err := s.IoCs(ctx, store.IoCFilter{Tag: "y"}, store.IoCOrder{Field: store.IoCOrderLastSeen, Desc: true}, 10, "")
		if err != nil || len(page.IoCs) != 1 || page.IoCs[0].Value != "b.example" {
			t.Errorf("tag y after the migrations: %+v, %v", page, err)
		}
		page, err = s.IoCs(ctx, store.IoCFilter{}, store.IoCOrder{Field: store.IoCOrderScore, Desc: true}, 10, "")
		if err != nil || len(page.IoCs) != 2 || page.IoCs[0].Value != "b.example" || page.IoCs[1].Value != "a.example" {
			t.Errorf("score order after the migrations: %+v, %v", page, err)
		}
	})
}

// Migration 20270111000100 makes the value keys complete by id: going up, an
// IoC changed since the keys' stamp (a new one, or an old one re-sighted)
// may lack its value key, so value_id starts below the first of them; going
// down, the stamp goes back before the first IoC after value_id. Each way
// every IoC ends with one value key once the indexer has caught up.
func TestValueKeysByIDMigrationGoesBothWays(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feedA, feedB := newFeed(t, s, "a"), newFeed(t, s, "b")
		apply(t, s, store.Batch{FeedID: feedA, Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("a.example", "s", 10), dom("b.example", "s", 20), dom("c.example", "s", 30)}})
		catchUp := func() {
			t.Helper()
			catchUpAll(t, s.CatchUpKeys, 100)
			if k, n := countRows(t, s, "ioc_value_keys"), countRows(t, s, "iocs"); k != n {
				t.Fatalf("%d value keys for %d IoCs after catching up", k, n)
			}
		}
		catchUp()
		m, mig := migration(t, s, "20270111000100")
		if err := mig.Down(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		// Before the upgrade: b re-sighted and d new, their keys not made.
		apply(t, s, store.Batch{FeedID: feedB, Now: t0.Add(time.Hour), Retention: day, Indicators: []ioc.Indicator{
			dom("b.example", "s", 50), dom("d.example", "s", 50)}})
		if err := mig.Up(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, s, "ioc_keys_state WHERE value_id = (SELECT id FROM iocs WHERE value = 'b.example') - 1"); n != 1 {
			t.Error("value_id after going up is not just below the first IoC changed since the stamp")
		}
		catchUp()

		// A new IoC without its value key, then down: the stamp goes back.
		apply(t, s, store.Batch{FeedID: feedB, Now: t0.Add(2 * time.Hour), Retention: day, Indicators: []ioc.Indicator{dom("e.example", "s", 50)}})
		if _, err := s.CatchUpOrderKeys(ctx, 100); err != nil {
			t.Fatal(err)
		}
		if err := mig.Down(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, s, "ioc_keys_state WHERE stamp < (SELECT changed_at FROM iocs WHERE value = 'e.example')"); n != 1 {
			t.Error("the stamp after going down is not below the IoC without a value key")
		}
		if err := mig.Up(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		catchUp()
	})
}

// Migration 20270114000100 gives PostgreSQL's value keys the values'
// trigram form and goes back to the values; either way a key is kept for
// every IoC there, and after going up a search finds by the form.
func TestValueKeysTrigramFormMigrationGoesBothWays(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		if s.Dialect != store.Postgres {
			t.Skip("SQLite's value keys are the values")
		}
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("a-b.example", "s", 10), dom("c_d.example", "s", 20)}})
		catchUpAll(t, s.CatchUpKeys, 100)
		keys := func() []string {
			t.Helper()
			var values []string
			if err := s.DB.NewRaw("SELECT value FROM ioc_value_keys ORDER BY id").Scan(ctx, &values); err != nil {
				t.Fatal(err)
			}
			return values
		}
		forms := []string{"azbqexample", "czdqexample"}
		if got := keys(); !slices.Equal(got, forms) {
			t.Fatalf("value keys %q, want the forms %q", got, forms)
		}
		m, mig := migration(t, s, "20270114000100")
		if err := mig.Down(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if got := keys(); !slices.Equal(got, []string{"a-b.example", "c_d.example"}) {
			t.Errorf("value keys after going down: %q, want the values", got)
		}
		if err := mig.Up(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if got := keys(); !slices.Equal(got, forms) {
			t.Errorf("value keys after going up: %q, want the forms %q", got, forms)
		}
		page, err := s.IoCs(ctx, store.IoCFilter{Search: "b.ex"}, store.IoCOrder{}, 10, "")
		if err != nil || len(page.IoCs) != 1 || page.IoCs[0].Value != "a-b.example" {
			t.Errorf("search b.ex after the migration: %+v, %v", page, err)
		}
	})
}

// Migration 20270114000200 has autovacuum come by after 2 % of the churning
// tables changed, and goes back to the server's default.
func TestPostgresVacuumSoonerMigrationGoesBothWays(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		if s.Dialect != store.Postgres {
			t.Skip("SQLite has no autovacuum")
		}
		ctx := context.Background()
		tables := []string{"ioc_tag_keys", "ioc_value_keys", "iocs", "sighting_rows"}
		options := func() map[string][]string {
			t.Helper()
			var rows []struct {
				Name    string
				Options []string `bun:",array"`
			}
			if err := s.DB.NewRaw("SELECT relname AS name, coalesce(reloptions, '{}') AS options FROM pg_class WHERE relname IN (?) ORDER BY 1", bun.In(tables)).Scan(ctx, &rows); err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, r := range rows {
				got[r.Name] = r.Options
			}
			return got
		}
		soon := []string{"autovacuum_vacuum_scale_factor=0.02", "autovacuum_analyze_scale_factor=0.02"}
		for name, opts := range options() {
			if !slices.Contains(opts, soon[0]) || !slices.Contains(opts, soon[1]) {
				t.Errorf("%s's options %q lack %q", name, opts, soon)
			}
		}
		if got := options(); len(got) != len(tables) || !slices.Contains(got["ioc_value_keys"], "parallel_workers=0") {
			t.Errorf("options %q: want every churning table, and no parallel scan of the value keys", got)
		}
		m, mig := migration(t, s, "20270114000200")
		if err := mig.Down(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		for name, opts := range options() {
			if slices.Contains(opts, soon[0]) || slices.Contains(opts, soon[1]) {
				t.Errorf("%s's options %q after going down", name, opts)
			}
		}
		if err := mig.Up(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		for name, opts := range options() {
			if !slices.Contains(opts, soon[0]) {
				t.Errorf("%s's options %q after going up again", name, opts)
			}
		}
	})
}

// migration returns a migrator of s and its migration named name, to run
// that one's Down and Up.
// Migration 20270115000100 counts each order's keys on a store that has
// them, and takes the counts away going down.
func TestOrderKeyRowsMigrationCountsTheKeys(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		if s.Dialect == store.Postgres {
			t.Skip("PostgreSQL keeps no order keys")
		}
		ctx := context.Background()
		apply(t, s, store.Batch{FeedID: newFeed(t, s, "f"), Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("a.example", "s", 10), dom("b.example", "s", 90), dom("c.example", "s", 50)}})
		catchUpAll(t, s.CatchUpKeys, 100)
		m, mig := migration(t, s, "20270115000100")
		if err := mig.Down(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, s, "sqlite_master WHERE name = 'ioc_order_key_rows'"); n != 0 {
			t.Error("the kept counts of keys are still there after going down")
		}
		if err := mig.Up(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, s, "ioc_order_key_rows WHERE rows = 3"); n != 4 {
			t.Errorf("%d orders' kept counts say 3 keys after going up, want 4", n)
		}
		checkKeptKeyRows(t, s, "after going up")
	})
}

func migration(t *testing.T, s *store.Store, name string) (*migrate.Migrator, *migrate.Migration) {
	t.Helper()
	all := migrations.Migrations.Sorted()
	i := slices.IndexFunc(all, func(m migrate.Migration) bool { return m.Name == name })
	if i < 0 {
		t.Fatalf("no migration %s", name)
	}
	return migrate.NewMigrator(s.DB, migrations.Migrations), &all[i]
}

// The score counts' migration counts the stored IoCs per score.
func TestScoreCountsMigrationCountsTheIoCs(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		apply(t, s, store.Batch{FeedID: newFeed(t, s, "f"), Now: t0, Retention: day, Indicators: []ioc.Indicator{
			dom("a.example", "s", 10), dom("b.example", "s", 90), dom("c.example", "s", 90)}})
		m, mig := migration(t, s, "20270116000100")
		if err := mig.Down(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if err := mig.Up(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		kept, err := store.KeptOverviewCounts(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int64]int64{10: 1, 90: 2}; !maps.Equal(kept.Scores, want) {
			t.Errorf("IoCs per score after the migration: %v, want %v", kept.Scores, want)
		}
	})
}
