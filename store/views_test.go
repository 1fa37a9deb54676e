package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestSavedViews(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		alice, err := s.CreateUser(ctx, "alice", "password1", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		bob, err := s.CreateUser(ctx, "bob", "password2", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		save := func(user int64, table, name, def string, isDefault bool) *store.SavedView {
			t.Helper()
			v := &store.SavedView{UserID: user, Table: table, Name: name, Definition: def, IsDefault: isDefault}
			if err := s.SaveView(ctx, v); err != nil {
				t.Fatalf("save %s: %v", name, err)
			}
			return v
		}
		errored := save(alice.ID, "feeds", "Errored", `{"v":1}`, true)
		custom := save(alice.ID, "feeds", "Custom only", `{"v":2}`, false)
		save(alice.ID, "iocs", "High score", `{"v":3}`, true)
		save(bob.ID, "feeds", "Errored", `{"v":4}`, true) // same name, another user

		// A second default on the same table replaces the first.
		custom = save(alice.ID, "feeds", "Custom only", `{"v":5}`, true)
		views, err := s.Views(ctx, alice.ID, "feeds")
		if err != nil {
			t.Fatal(err)
		}
		if len(views) != 2 || views[0].Name != "Custom only" || !views[0].IsDefault || views[1].IsDefault {
			t.Fatalf("views after new default = %+v", views)
		}
		if views[0].ID != custom.ID || views[0].Definition != `{"v":5}` {
			t.Errorf("saving an existing name must update it in place: %+v", views[0])
		}
		// The other table's default is untouched.
		iocViews, _ := s.Views(ctx, alice.ID, "iocs")
		if len(iocViews) != 1 || !iocViews[0].IsDefault {
			t.Errorf("iocs views = %+v", iocViews)
		}

		if err := s.SaveView(ctx, &store.SavedView{UserID: alice.ID, Table: "feeds", Name: "  "}); err == nil {
			t.Error("blank name accepted")
		}
		if _, err := s.View(ctx, bob.ID, errored.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("bob reads alice's view: %v", err)
		}
		if err := s.DeleteView(ctx, bob.ID, errored.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("bob deletes alice's view: %v", err)
		}
		if err := s.DeleteView(ctx, alice.ID, errored.ID); err != nil {
			t.Fatal(err)
		}
		if views, _ := s.Views(ctx, alice.ID, "feeds"); len(views) != 1 {
			t.Errorf("after delete: %+v", views)
		}
	})
}
