package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestMigrationsOnEmptyDatabase(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		// storetest migrated already; a second run must find nothing to do.
		applied, err := s.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 0 {
			t.Errorf("second migrate applied %v", applied)
		}
		for _, table := range []string{"users", "api_keys", "sessions", "tenants", "tenant_groups",
			"feeds", "feed_runs", "iocs", "sightings", "saved_views"} {
			if _, err := s.DB.NewSelect().Table(table).Count(ctx); err != nil {
				t.Errorf("table %s: %v", table, err)
			}
		}
	})
}

func TestPasswordAndAPIKeyChecks(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, err := s.CreateUser(ctx, "alice", "correct horse", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateUser(ctx, "alice", "another password", store.ScopeRoot, nil); !errors.Is(err, store.ErrConflict) {
			t.Errorf("duplicate username: %v, want ErrConflict", err)
		}
		k1, key1, err := s.CreateAPIKey(ctx, u.ID, "one", "")
		if err != nil {
			t.Fatal(err)
		}
		_, key2, err := s.CreateAPIKey(ctx, u.ID, "two", "")
		if err != nil {
			t.Fatal(err)
		}
		var stored string
		if err := s.DB.NewSelect().Table("api_keys").Column("hash").Where("id = ?", k1.ID).Scan(ctx, &stored); err != nil {
			t.Fatal(err)
		}
		if stored == key1 || len(stored) != 64 {
			t.Errorf("API key stored as %q: want its SHA-256, not the key", stored)
		}

		for name, tc := range map[string]struct {
			check func() (*store.User, error)
			ok    bool
		}{
			"right password":      {func() (*store.User, error) { return s.CheckPassword(ctx, "alice", "correct horse") }, true},
			"wrong password":      {func() (*store.User, error) { return s.CheckPassword(ctx, "alice", "wrong horse") }, false},
			"unknown user (pass)": {func() (*store.User, error) { return s.CheckPassword(ctx, "bob", "correct horse") }, false},
			"first key":           {func() (*store.User, error) { return s.CheckAPIKey(ctx, "alice", key1) }, true},
			"second key":          {func() (*store.User, error) { return s.CheckAPIKey(ctx, "alice", key2) }, true},
			"wrong key":           {func() (*store.User, error) { return s.CheckAPIKey(ctx, "alice", key1+"x") }, false},
			"unknown user (key)":  {func() (*store.User, error) { return s.CheckAPIKey(ctx, "bob", key1) }, false},
			"password as key":     {func() (*store.User, error) { return s.CheckAPIKey(ctx, "alice", "correct horse") }, false},
		} {
			got, err := tc.check()
			if tc.ok && (err != nil || got.ID != u.ID) {
				t.Errorf("%s: got %v, %v; want alice", name, got, err)
			}
			if !tc.ok && !errors.Is(err, store.ErrBadCredentials) {
				t.Errorf("%s: err = %v, want ErrBadCredentials", name, err)
			}
		}

		if err := s.RevokeAPIKey(ctx, u.ID, k1.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CheckAPIKey(ctx, "alice", key1); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("revoked key: %v", err)
		}
		if _, err := s.CheckAPIKey(ctx, "alice", key2); err != nil {
			t.Errorf("other key after revoke: %v", err)
		}
		if err := s.RevokeAPIKey(ctx, u.ID, k1.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("revoking twice: %v, want ErrNotFound", err)
		}
	})
}

func TestEnsureAdminOnlyOnce(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		first, err := s.EnsureAdmin(ctx, "admin", "", "")
		if err != nil {
			t.Fatal(err)
		}
		if !first.Created || first.Password == "" || first.APIKey == "" {
			t.Fatalf("first start: %+v, want generated password and key", first)
		}
		if _, err := s.CheckAPIKey(ctx, "admin", first.APIKey); err != nil {
			t.Errorf("generated key: %v", err)
		}
		u, err := s.CheckPassword(ctx, "admin", first.Password)
		if err != nil || u.Scope != store.ScopeRoot {
			t.Errorf("generated password: %v %v", u, err)
		}
		again, err := s.EnsureAdmin(ctx, "admin", "", "")
		if err != nil || again.Created || again.Password != "" {
			t.Errorf("second start: %+v %v, want nothing created", again, err)
		}
		given, err := s.EnsureAdmin(ctx, "other", "given-password", "given-api-key-0123456789")
		if err != nil || given.Created {
			t.Errorf("a database with users gets no second admin: %+v %v", given, err)
		}
	})
}

func TestSessions(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, err := s.CreateUser(ctx, "carol", "password123", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		token, err := s.CreateSession(ctx, u.ID, -1) // already expired
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SessionUser(ctx, token); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("expired session: %v", err)
		}
		token, err = s.CreateSession(ctx, u.ID, 3600e9)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.SessionUser(ctx, token); err != nil || got.ID != u.ID {
			t.Errorf("live session: %v %v", got, err)
		}
		if err := s.DeleteSession(ctx, token); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SessionUser(ctx, token); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("deleted session: %v", err)
		}
	})
}

// TestTenantUserNeedsItsTenant: a tenant-scoped user signs in only while
// their tenant exists, and cannot be created for a tenant that does not.
func TestTenantUserNeedsItsTenant(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		tenant, err := s.CreateTenant(ctx, store.TenantInput{Name: store.Some("Acme")}, store.TenantRules{})
		if err != nil {
			t.Fatal(err)
		}
		var valErr *store.ValidationError
		if _, err := s.CreateUser(ctx, "ghost", "password1", store.ScopeTenant, ptr("no-such-tenant")); !errors.As(err, &valErr) {
			t.Errorf("user of an unknown tenant: %v, want a ValidationError", err)
		}
		if _, err := s.CreateUser(ctx, "rooted", "password1", store.ScopeRoot, &tenant.ID); err == nil {
			t.Error("root user with a tenant: accepted")
		}
		u, err := s.CreateUser(ctx, "analyst", "password1", store.ScopeTenant, &tenant.ID)
		if err != nil {
			t.Fatal(err)
		}
		_, key, err := s.CreateAPIKey(ctx, u.ID, "k", "")
		if err != nil {
			t.Fatal(err)
		}
		token, err := s.CreateSession(ctx, u.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		_, keyCred, err := s.AuthenticateAPIKey(ctx, "analyst", key)
		if err != nil || keyCred.TenantID != tenant.ID || keyCred.APIKeyID == 0 {
			t.Fatalf("API key before: %+v %v", keyCred, err)
		}
		_, sessCred, err := s.AuthenticateSession(ctx, token)
		if err != nil || sessCred.SessionHash != store.SessionHash(token) {
			t.Fatalf("session before: %+v %v", sessCred, err)
		}
		checks := map[string]func() error{
			"password": func() error { _, err := s.CheckPassword(ctx, "analyst", "password1"); return err },
			"API key":  func() error { _, err := s.CheckAPIKey(ctx, "analyst", key); return err },
			"session":  func() error { _, err := s.SessionUser(ctx, token); return err },
			"key credential": func() error {
				_, err := s.CheckCredential(ctx, keyCred)
				return err
			},
			"session credential": func() error {
				_, err := s.CheckCredential(ctx, sessCred)
				return err
			},
		}
		for name, check := range checks {
			if err := check(); err != nil {
				t.Errorf("%s with the tenant: %v", name, err)
			}
		}
		if _, err := s.DeleteTenant(ctx, tenant.ID); err != nil {
			t.Fatal(err)
		}
		for name, check := range checks {
			if err := check(); !errors.Is(err, store.ErrBadCredentials) {
				t.Errorf("%s after the tenant was deleted: %v, want ErrBadCredentials", name, err)
			}
		}
	})
}

// TestCheckCredential: a socket's credential stops holding when its key is
// revoked or its session ends, and names only its own user.
func TestCheckCredential(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, err := s.CreateUser(ctx, "ops", "password1", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		k, key, err := s.CreateAPIKey(ctx, u.ID, "k", "")
		if err != nil {
			t.Fatal(err)
		}
		token, err := s.CreateSession(ctx, u.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		_, keyCred, err := s.AuthenticateAPIKey(ctx, "ops", key)
		if err != nil {
			t.Fatal(err)
		}
		_, sessCred, err := s.AuthenticateSession(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		for name, c := range map[string]store.Credential{
			"empty":           {UserID: u.ID},
			"another user's":  {UserID: u.ID + 1, APIKeyID: k.ID},
			"unknown session": {UserID: u.ID, SessionHash: store.SessionHash("nope")},
		} {
			if _, err := s.CheckCredential(ctx, c); !errors.Is(err, store.ErrBadCredentials) {
				t.Errorf("%s credential: %v, want ErrBadCredentials", name, err)
			}
		}
		if err := s.RevokeAPIKey(ctx, u.ID, k.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CheckCredential(ctx, keyCred); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("revoked key: %v", err)
		}
		if _, err := s.CheckCredential(ctx, sessCred); err != nil {
			t.Errorf("session, unaffected by the key: %v", err)
		}
		if err := s.DeleteSession(ctx, token); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CheckCredential(ctx, sessCred); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("ended session: %v", err)
		}
	})
}

func ptr[T any](v T) *T { return &v }
