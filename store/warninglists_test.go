package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
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
