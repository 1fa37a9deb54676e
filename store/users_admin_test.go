package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var v *store.ValidationError
	if !errors.As(err, &v) || v.Field != field {
		t.Errorf("err = %v, want a validation error on %q", err, field)
	}
}

func TestDisabledUserIsRefusedEverywhere(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.CreateUser(ctx, "admin", "password1", store.ScopeRoot, nil); err != nil {
			t.Fatal(err)
		}
		bob, err := s.CreateUser(ctx, "bob", "password2", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bob.Enabled {
			t.Fatal("a new user is disabled")
		}
		_, key, err := s.CreateAPIKey(ctx, bob.ID, "k", "")
		if err != nil {
			t.Fatal(err)
		}
		token, err := s.CreateSession(ctx, bob.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		_, keyCred, err := s.AuthenticateAPIKey(ctx, "bob", key)
		if err != nil {
			t.Fatal(err)
		}
		if u, _ := s.UserByID(ctx, bob.ID); u.LastSignInAt == nil {
			t.Error("a session did not record the sign-in")
		}

		if u, err := s.SetUserEnabled(ctx, bob.ID, false); err != nil || u.Enabled {
			t.Fatalf("disable = %+v, %v", u, err)
		}
		if _, err := s.CheckPassword(ctx, "bob", "password2"); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("password of a disabled user: %v", err)
		}
		if _, _, err := s.AuthenticateAPIKey(ctx, "bob", key); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("key of a disabled user: %v", err)
		}
		if _, _, err := s.AuthenticateSession(ctx, token); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("session of a disabled user: %v", err)
		}
		if _, err := s.CheckCredential(ctx, keyCred); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("socket re-check of a disabled user's key: %v", err)
		}
		// Enabled again, the keys work (sessions ended for good).
		if _, err := s.SetUserEnabled(ctx, bob.ID, true); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.AuthenticateAPIKey(ctx, "bob", key); err != nil {
			t.Errorf("key after re-enabling: %v", err)
		}
		if _, _, err := s.AuthenticateSession(ctx, token); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("session survived the disabling: %v", err)
		}
	})
}

func TestLastEnabledRootStays(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, err := s.CreateUser(ctx, "a", "password1", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.CreateUser(ctx, "b", "password1", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetUserEnabled(ctx, b.ID, false); err != nil {
			t.Fatal(err)
		}
		_, err = s.SetUserEnabled(ctx, a.ID, false)
		wantInvalid(t, err, "enabled")
		_, err = s.DeleteUser(ctx, a.ID)
		wantInvalid(t, err, "id")
		if u, err := s.UserByID(ctx, a.ID); err != nil || !u.Enabled {
			t.Errorf("the last root = %+v, %v", u, err)
		}
		// A disabled root goes; then the enabled one is still the last.
		if _, err := s.DeleteUser(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UserByID(ctx, b.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted user: %v", err)
		}
		if _, err := s.DeleteUser(ctx, b.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleting again: %v", err)
		}
	})
}

func TestDeleteUserEndsEverythingAndCounts(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.CreateUser(ctx, "root", "password1", store.ScopeRoot, nil); err != nil {
			t.Fatal(err)
		}
		tn, err := s.CreateTenant(ctx, store.TenantInput{Name: store.Some("Acme")}, store.TenantRules{})
		if err != nil {
			t.Fatal(err)
		}
		u1, err := s.CreateUser(ctx, "t1", "password1", store.ScopeTenant, &tn.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateUser(ctx, "t2", "password1", store.ScopeTenant, &tn.ID); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Tenant(ctx, tn.ID); got.UserNum != 2 {
			t.Fatalf("user_num = %d, want 2", got.UserNum)
		}
		_, key, err := s.CreateAPIKey(ctx, u1.ID, "k", "")
		if err != nil {
			t.Fatal(err)
		}
		token, err := s.CreateSession(ctx, u1.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteUser(ctx, u1.ID); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Tenant(ctx, tn.ID); got.UserNum != 1 {
			t.Errorf("user_num after a deletion = %d, want 1", got.UserNum)
		}
		if _, _, err := s.AuthenticateAPIKey(ctx, "t1", key); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("key of a deleted user: %v", err)
		}
		if _, _, err := s.AuthenticateSession(ctx, token); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("session of a deleted user: %v", err)
		}
		for _, table := range []string{"api_keys", "sessions"} {
			if n, _ := s.DB.NewSelect().Table(table).Where("user_id = ?", u1.ID).Count(ctx); n != 0 {
				t.Errorf("%d %s rows left", n, table)
			}
		}
		// A new user with the deleted one's name is a new user.
		if _, err := s.CreateUser(ctx, "t1", "password1", store.ScopeTenant, &tn.ID); err != nil {
			t.Errorf("reusing the name: %v", err)
		}
	})
}

func TestResetAndChangePassword(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, err := s.CreateUser(ctx, "carol", "password1", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, key, err := s.CreateAPIKey(ctx, u.ID, "k", "")
		if err != nil {
			t.Fatal(err)
		}
		old, err := s.CreateSession(ctx, u.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		once, err := s.ResetUserPassword(ctx, u.ID)
		if err != nil || len(once) < store.MinPasswordLength {
			t.Fatalf("reset = %q, %v", once, err)
		}
		if _, _, err := s.AuthenticateSession(ctx, old); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("a session survived the reset: %v", err)
		}
		if _, err := s.CheckPassword(ctx, "carol", "password1"); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("old password after reset: %v", err)
		}
		signed, err := s.CheckPassword(ctx, "carol", once)
		if err != nil || !signed.MustChangePassword {
			t.Fatalf("one-time password = %+v, %v", signed, err)
		}
		token, err := s.CreateSession(ctx, u.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		other, err := s.CreateSession(ctx, u.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if su, _, err := s.AuthenticateSession(ctx, token); err != nil || !su.MustChangePassword {
			t.Errorf("session after reset = %+v, %v: want one that must change the password", su, err)
		}
		if ku, _, err := s.AuthenticateAPIKey(ctx, "carol", key); err != nil || ku.MustChangePassword {
			t.Errorf("key after reset = %+v, %v: keys are not bound by the change", ku, err)
		}

		wantInvalid(t, s.ChangePassword(ctx, u.ID, "wrong one", "new password", store.SessionHash(token)), "currentPassword")
		wantInvalid(t, s.ChangePassword(ctx, u.ID, once, "short", store.SessionHash(token)), "newPassword")
		wantInvalid(t, s.ChangePassword(ctx, u.ID, once, once, store.SessionHash(token)), "newPassword")
		if err := s.ChangePassword(ctx, u.ID, once, "new password", store.SessionHash(token)); err != nil {
			t.Fatal(err)
		}
		if su, _, err := s.AuthenticateSession(ctx, token); err != nil || su.MustChangePassword {
			t.Errorf("the changing session = %+v, %v: want it kept and free", su, err)
		}
		if _, _, err := s.AuthenticateSession(ctx, other); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("another session survived the change: %v", err)
		}
		if _, err := s.CheckPassword(ctx, "carol", "new password"); err != nil {
			t.Errorf("new password: %v", err)
		}
		if _, err := s.ResetUserPassword(ctx, 999999); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("reset of an unknown user: %v", err)
		}
	})
}

func TestCreateUserRules(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for field, tc := range map[string]struct {
			name, pw string
			scope    store.Scope
			tenant   *string
		}{
			"username": {"a b", "password1", store.ScopeRoot, nil},
			"password": {"ok", "short", store.ScopeRoot, nil},
			"scope":    {"ok", "password1", "god", nil},
			"tenantId": {"ok", "password1", store.ScopeTenant, nil},
		} {
			_, err := s.CreateUser(ctx, tc.name, tc.pw, tc.scope, tc.tenant)
			wantInvalid(t, err, field)
		}
		long := string(make([]byte, store.MaxPasswordBytes+1))
		_, err := s.CreateUser(ctx, "ok", long, store.ScopeRoot, nil)
		wantInvalid(t, err, "password")
	})
}
