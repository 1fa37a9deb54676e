package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun/migrate"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/migrations"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestWarninglistRows: built-in actions are upserted, own lists are
// bounded in number and unique by name, a built-in row is neither an own
// list to change nor to delete, and a refresh replaces the content.
func TestWarninglistRows(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		for _, a := range []string{"off", "drop"} {
			if err := st.SetBuiltinWarninglistAction(ctx, "tranco10k", a); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 2 {
			if err := st.AddWarninglist(ctx, &store.Warninglist{Name: fmt.Sprint("own-", i), Action: "flag", Content: []byte("192.0.2.1\n")}, 2); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.AddWarninglist(ctx, &store.Warninglist{Name: "own-2", Action: "flag"}, 2); !errors.Is(err, store.ErrWarninglistsFull) {
			t.Errorf("third list: %v, want ErrWarninglistsFull", err)
		}
		if err := st.AddWarninglist(ctx, &store.Warninglist{Name: "own-0", Action: "flag"}, 3); !errors.Is(err, store.ErrConflict) {
			t.Errorf("same name: %v, want ErrConflict", err)
		}
		if err := st.SetOwnWarninglistAction(ctx, "tranco10k", "flag"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("own action of a built-in list: %v", err)
		}
		if _, err := st.DeleteWarninglist(ctx, "tranco10k"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("delete a built-in list: %v", err)
		}
		if err := st.SetOwnWarninglistAction(ctx, "own-1", "drop"); err != nil {
			t.Fatal(err)
		}
		if err := st.UpdateWarninglistContent(ctx, "own-1", []byte("198.51.100.0/24\n"), `"v2"`, time.Now()); err != nil {
			t.Fatal(err)
		}
		rows, err := st.Warninglists(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%s %s %v %d", r.Name, r.Action, r.Builtin, len(r.Content)))
		}
		if fmt.Sprint(got) != "[own-0 flag false 0 own-1 drop false 0 tranco10k drop true 0]" {
			t.Errorf("rows = %q", got)
		}
		w, err := st.Warninglist(ctx, "own-1")
		if err != nil || string(w.Content) != "198.51.100.0/24\n" || w.ETag != `"v2"` || w.FetchedAt == nil {
			t.Errorf("own-1 = %+v, %v", w, err)
		}
		if _, err := st.DeleteWarninglist(ctx, "own-0"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Warninglist(ctx, "own-0"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted list: %v", err)
		}
	})
}

// TestWarninglistRemovalPending: drop marks a list's removal pending
// (built-in, own, imported), another action or the end of the removal
// clears it, a mark again takes only on a dropping list, one instance at a
// time holds the removal lock, and the column goes down and up again.
func TestWarninglistRemovalPending(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		pending := func(name string) bool {
			t.Helper()
			p, err := st.WarninglistRemovalPending(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(st.SetBuiltinWarninglistAction(ctx, "dynamic-dns", "drop"))
		must(st.AddWarninglist(ctx, &store.Warninglist{Name: "own-drop", Action: "drop", Content: []byte("192.0.2.1\n")}, 5))
		must(st.AddWarninglist(ctx, &store.Warninglist{Name: "own-flag", Action: "flag", Content: []byte("192.0.2.1\n")}, 5))
		if !pending("dynamic-dns") || !pending("own-drop") || pending("own-flag") || pending("no-such-list") {
			t.Errorf("pending: dynamic-dns %v, own-drop %v, own-flag %v; want true, true, false",
				pending("dynamic-dns"), pending("own-drop"), pending("own-flag"))
		}
		must(st.SetBuiltinWarninglistAction(ctx, "dynamic-dns", "flag"))
		must(st.SetOwnWarninglistAction(ctx, "own-drop", "off"))
		if pending("dynamic-dns") || pending("own-drop") {
			t.Error("a list turned to flag or off is pending removal still")
		}
		must(st.MarkWarninglistRemoval(ctx, "own-flag"))
		if pending("own-flag") {
			t.Error("a flagging list was marked for removal")
		}
		must(st.SetOwnWarninglistAction(ctx, "own-flag", "drop"))
		must(st.FinishWarninglistRemoval(ctx, "own-flag", nil))
		if pending("own-flag") {
			t.Error("a finished removal is pending still")
		}
		must(st.MarkWarninglistRemoval(ctx, "own-flag"))
		if !pending("own-flag") {
			t.Error("a dropping list marked again is not pending")
		}

		unlock, ok, err := st.TryLockWarninglistRemoval(ctx)
		if err != nil || !ok {
			t.Fatalf("removal lock: %v, %v", ok, err)
		}
		if st.Dialect == store.Postgres {
			if _, again, err := st.TryLockWarninglistRemoval(ctx); err != nil || again {
				t.Errorf("the removal lock was taken twice (%v, %v)", again, err)
			}
		}
		unlock()
		unlock, ok, err = st.TryLockWarninglistRemoval(ctx)
		if err != nil || !ok {
			t.Fatalf("removal lock after unlock: %v, %v", ok, err)
		}
		unlock()

		var mig *migrate.Migration
		for _, m := range migrations.Migrations.Sorted() {
			if m.Name == "20270108000100" {
				mig = &m
			}
		}
		if mig == nil {
			t.Fatal("no migration 20270108000100")
		}
		migrator := migrate.NewMigrator(st.DB, migrations.Migrations)
		must(mig.Down(ctx, migrator, mig))
		if _, err := st.DB.ExecContext(ctx, `SELECT removal_pending FROM warninglists`); err == nil {
			t.Error("warninglists.removal_pending is there still after down")
		}
		must(mig.Up(ctx, migrator, mig))
		if pending("own-flag") {
			t.Error("removal_pending is not false after up")
		}
	})
}

// TestWarninglistSweepRecords: a built-in list that drops is marked for a
// sweep until a finished removal records its version and entry count, and
// again when either differs; its row keeps the default action in force
// (empty) until root sets one; a list that does not drop is never marked;
// and the columns go down and up again.
func TestWarninglistSweepRecords(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		mark := func(name string, sw store.WarninglistSweep, defaultDrop bool) bool {
			t.Helper()
			marked, err := st.MarkBuiltinWarninglistSweep(ctx, name, sw, defaultDrop)
			must(err)
			if p, err := st.WarninglistRemovalPending(ctx, name); err != nil || p != marked {
				t.Errorf("%s marked %v, pending %v (%v)", name, marked, p, err)
			}
			return marked
		}
		row := func(name string) *store.Warninglist {
			t.Helper()
			w, err := st.Warninglist(ctx, name)
			must(err)
			return w
		}
		v1, v2 := store.WarninglistSweep{Version: 20260101, Entries: 10}, store.WarninglistSweep{Version: 20260202, Entries: 10}

		if !mark("reserved", v1, true) {
			t.Error("a dropping list without a row is not marked")
		}
		if w := row("reserved"); w.Action != "" || !w.Builtin || w.Swept(v1) {
			t.Errorf("the row made for a sweep = %+v, want a built-in row with no action and nothing swept", w)
		}
		must(st.FinishWarninglistRemoval(ctx, "reserved", &v1))
		if w := row("reserved"); !w.Swept(v1) || w.RemovalPending {
			t.Errorf("after the sweep: %+v, want v1 swept", w)
		}
		if mark("reserved", v1, true) {
			t.Error("a list swept at its version is marked again")
		}
		if !mark("reserved", v2, true) {
			t.Error("a new version is not marked")
		}
		must(st.FinishWarninglistRemoval(ctx, "reserved", &v2))
		if !mark("reserved", store.WarninglistSweep{Version: v2.Version, Entries: 11}, true) {
			t.Error("another entry count at the same version is not marked")
		}

		// Root's actions: flag on a list that drops by default, drop on
		// one that does not; a row without action for a list whose
		// default no longer drops.
		must(st.SetBuiltinWarninglistAction(ctx, "tranco10k", "flag"))
		if mark("tranco10k", v1, true) {
			t.Error("a list root turned to flag is marked")
		}
		must(st.SetBuiltinWarninglistAction(ctx, "vpn-ipv4", "drop"))
		must(st.FinishWarninglistRemoval(ctx, "vpn-ipv4", &v1))
		if mark("vpn-ipv4", v1, false) || !mark("vpn-ipv4", v2, false) {
			t.Error("a list root turned to drop is not marked for its new version only")
		}
		if w := row("vpn-ipv4"); w.Action != "drop" {
			t.Errorf("vpn-ipv4's action = %q after its sweeps, want drop", w.Action)
		}
		if !mark("sinkholes", v1, true) {
			t.Fatal("sinkholes is not marked")
		}
		must(st.FinishWarninglistRemoval(ctx, "sinkholes", nil))
		if mark("sinkholes", v2, false) {
			t.Error("a row without action is marked for a list whose default does not drop")
		}
		must(st.SetBuiltinWarninglistAction(ctx, "sinkholes", "flag"))
		if w := row("sinkholes"); w.Action != "flag" || w.SweptVersion != nil {
			t.Errorf("sinkholes after root set flag = %+v", w)
		}

		var mig *migrate.Migration
		for _, m := range migrations.Migrations.Sorted() {
			if m.Name == "20270109000100" {
				mig = &m
			}
		}
		if mig == nil {
			t.Fatal("no migration 20270109000100")
		}
		migrator := migrate.NewMigrator(st.DB, migrations.Migrations)
		must(mig.Down(ctx, migrator, mig))
		if _, err := st.DB.ExecContext(ctx, `SELECT swept_version FROM warninglists`); err == nil {
			t.Error("warninglists.swept_version is there still after down")
		}
		if _, err := st.DB.ExecContext(ctx, `SELECT swept_entries FROM warninglists`); err == nil {
			t.Error("warninglists.swept_entries is there still after down")
		}
		must(mig.Up(ctx, migrator, mig))
		if w := row("vpn-ipv4"); w.SweptVersion != nil || w.SweptEntries != nil {
			t.Errorf("after up: %+v, want nothing swept", w)
		}
	})
}
