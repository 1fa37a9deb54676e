package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestMFAMigrationGoesBothWays: migration 20270104000100 goes down (the
// columns and tables go) and up again on a database with users.
func TestMFAMigrationGoesBothWays(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, err := s.CreateUser(ctx, "ann", "password-1234", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, mig := migration(t, s, "20270104000100")
		if err := mig.Down(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DB.ExecContext(ctx, "SELECT mfa_enabled FROM users"); err == nil {
			t.Error("users.mfa_enabled is still there after going down")
		}
		if err := mig.Up(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if got, err := s.UserByID(ctx, u.ID); err != nil || got.MFAEnabled {
			t.Errorf("user after going up: %+v %v", got, err)
		}
	})
}

// TestMFAChallengeLifecycle: a challenge is found by its token while live,
// ends after MaxMFAChallengeAttempts failures or at its expiry, is consumed
// once, goes with its user, and a user holds a bounded number.
func TestMFAChallengeLifecycle(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, err := s.CreateUser(ctx, "ann", "password-1234", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		token, err := s.CreateMFAChallenge(ctx, u.ID, true, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, s, "mfa_challenges WHERE token_hash = '"+token+"'"); n != 0 {
			t.Error("the token is stored in clear")
		}
		c, got, err := s.LiveMFAChallenge(ctx, token)
		if err != nil || !c.Enrol || got.ID != u.ID {
			t.Fatalf("live challenge: %+v %+v %v", c, got, err)
		}
		for range store.MaxMFAChallengeAttempts - 1 {
			if err := s.FailMFAChallenge(ctx, token); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.LiveMFAChallenge(ctx, token); err != nil {
			t.Fatalf("after %d failures: %v", store.MaxMFAChallengeAttempts-1, err)
		}
		if err := s.FailMFAChallenge(ctx, token); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.LiveMFAChallenge(ctx, token); err != store.ErrBadCredentials {
			t.Errorf("after %d failures: %v", store.MaxMFAChallengeAttempts, err)
		}
		if ok, err := s.ConsumeMFAChallenge(ctx, token); ok || err != nil {
			t.Errorf("consume a spent challenge: %v %v", ok, err)
		}

		token, _ = s.CreateMFAChallenge(ctx, u.ID, false, time.Minute)
		if ok, err := s.ConsumeMFAChallenge(ctx, token); !ok || err != nil {
			t.Fatalf("consume: %v %v", ok, err)
		}
		if ok, _ := s.ConsumeMFAChallenge(ctx, token); ok {
			t.Error("consumed twice")
		}
		expired, _ := s.CreateMFAChallenge(ctx, u.ID, false, -time.Second)
		if _, _, err := s.LiveMFAChallenge(ctx, expired); err != store.ErrBadCredentials {
			t.Errorf("expired challenge: %v", err)
		}
		for range 8 {
			if _, err := s.CreateMFAChallenge(ctx, u.ID, false, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if n := countRows(t, s, "mfa_challenges"); n != 5 {
			t.Errorf("%d challenges kept, want 5", n)
		}
		// A disabled user's challenge opens nothing.
		if _, err := s.CreateUser(ctx, "bob", "password-1234", store.ScopeRoot, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetUserEnabled(ctx, u.ID, false); err != nil {
			t.Fatal(err)
		}
		token, _ = s.CreateMFAChallenge(ctx, u.ID, false, time.Minute)
		if _, _, err := s.LiveMFAChallenge(ctx, token); err != store.ErrBadCredentials {
			t.Errorf("disabled user's challenge: %v", err)
		}
	})
}

// TestMFAStepOnceAcrossInstances: two stores on one PostgreSQL database
// race to take the same step; exactly one wins each time.
func TestMFAStepOnceAcrossInstances(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	ctx := context.Background()
	var stores [2]*store.Store
	for i := range stores {
		s, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	u, err := stores[0].CreateUser(ctx, "ann", "password-1234", store.ScopeRoot, nil)
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustExec(t, stores[0], "UPDATE users SET mfa_enabled = TRUE WHERE id = ?", u.ID)
	for step := int64(1000); step < 1020; step++ {
		var wg sync.WaitGroup
		var won [2]bool
		for i := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := stores[i].UseMFAStep(ctx, u.ID, step)
				if err != nil {
					t.Error(err)
				}
				won[i] = ok
			}()
		}
		wg.Wait()
		if won[0] == won[1] {
			t.Fatalf("step %d: both instances answered %v", step, won[0])
		}
	}
}
