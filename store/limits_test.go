package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func isInvalid(err error, field string) bool {
	var v *store.ValidationError
	return errors.As(err, &v) && v.Field == field
}

func TestAPIKeyLimits(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, err := s.CreateUser(ctx, "alice", "correct horse", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, bad := range map[string]string{
			"over-long name":         strings.Repeat("k", store.MaxAPIKeyNameLength+1),
			"control character":      "a\x07b",
			"NUL (PostgreSQL's 500)": "a\x00b",
		} {
			if _, _, err := s.CreateAPIKey(ctx, u.ID, bad, ""); !isInvalid(err, "name") {
				t.Errorf("%s: %v, want a validation error on name", name, err)
			}
		}
		var last *store.APIKey
		for i := range store.MaxLiveAPIKeys {
			if last, _, err = s.CreateAPIKey(ctx, u.ID, fmt.Sprint("k", i), ""); err != nil {
				t.Fatalf("key %d: %v", i, err)
			}
		}
		if _, _, err := s.CreateAPIKey(ctx, u.ID, "one too many", ""); !isInvalid(err, "name") {
			t.Fatalf("key %d: %v, want the limit", store.MaxLiveAPIKeys+1, err)
		}
		if err := s.RevokeAPIKey(ctx, u.ID, last.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.CreateAPIKey(ctx, u.ID, "after a revocation", ""); err != nil {
			t.Errorf("after revoking one: %v", err)
		}
		// Revoking and creating over and over keeps a bounded history.
		for i := range 60 {
			keys, _ := s.APIKeys(ctx, u.ID)
			if err := s.RevokeAPIKey(ctx, u.ID, keys[0].ID); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.CreateAPIKey(ctx, u.ID, fmt.Sprint("cycle", i), ""); err != nil {
				t.Fatal(err)
			}
		}
		keys, err := s.APIKeys(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > store.MaxLiveAPIKeys+50 {
			t.Errorf("%d keys kept after 60 revoke/create cycles", len(keys))
		}
	})
}

func TestSessionLimits(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, err := s.CreateUser(ctx, "alice", "correct horse", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		other, err := s.CreateUser(ctx, "bob", "correct horse", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		expired, err := s.CreateSession(ctx, other.ID, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		var tokens []string
		for range store.MaxSessions + 3 {
			tok, err := s.CreateSession(ctx, u.ID, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, tok)
			time.Sleep(2 * time.Millisecond) // distinct creation times, for "oldest"
		}
		n, err := s.DB.NewSelect().Model((*store.Session)(nil)).Where("user_id = ?", u.ID).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n != store.MaxSessions {
			t.Errorf("%d sessions kept, want %d", n, store.MaxSessions)
		}
		if _, err := s.SessionUser(ctx, tokens[0]); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("the oldest session still works: %v", err)
		}
		if _, err := s.SessionUser(ctx, tokens[len(tokens)-1]); err != nil {
			t.Errorf("the newest session: %v", err)
		}
		left, err := s.DB.NewSelect().Model((*store.Session)(nil)).Where("user_id = ?", other.ID).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Errorf("expired session %.4s… not purged", expired)
		}
	})
}

func TestSavedViewLimits(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, err := s.CreateUser(ctx, "alice", "correct horse", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		save := func(name, def string) error {
			return s.SaveView(ctx, &store.SavedView{UserID: u.ID, Table: "iocs", Name: name, Definition: def})
		}
		for i := range store.MaxViewsPerTable {
			if err := save(fmt.Sprint("v", i), `{}`); err != nil {
				t.Fatal(err)
			}
		}
		if err := save("one too many", `{}`); !isInvalid(err, "name") {
			t.Errorf("view %d: %v, want the limit", store.MaxViewsPerTable+1, err)
		}
		if err := save("v0", `{"search":"x"}`); err != nil {
			t.Errorf("replacing a view at the limit: %v", err)
		}
		if err := s.SaveView(ctx, &store.SavedView{UserID: u.ID, Table: "feeds", Name: "v0", Definition: `{}`}); err != nil {
			t.Errorf("another table has its own limit: %v", err)
		}
		if err := save("v1", `{"search":"`+strings.Repeat("x", 70<<10)+`"}`); !isInvalid(err, "filter") {
			t.Errorf("huge definition: %v", err)
		}
	})
}
