package auth_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func code(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCodeWindow: codes of the current step and one on either side are
// good, two steps off are not, and each step is taken once: codes are made
// by the library's generator at times the test chooses.
func TestCodeWindow(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		secrets, err := store.NewSecrets(bytes.Repeat([]byte{7}, 32))
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2027, 1, 4, 8, 0, 15, 0, time.UTC)
		m := &auth.MFA{Store: st, Secrets: secrets, Now: func() time.Time { return now }}
		enrol := func(name string, off time.Duration) (*store.User, string, error) {
			u, err := st.CreateUser(ctx, name, "password-1234", store.ScopeRoot, nil)
			if err != nil {
				t.Fatal(err)
			}
			e, err := m.Begin(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Confirm(ctx, u.ID, code(t, e.Secret, now.Add(off)))
			return u, e.Secret, err
		}
		for _, c := range []struct {
			name string
			off  time.Duration
			ok   bool
		}{{"minus2", -60 * time.Second, false}, {"minus1", -30 * time.Second, true}, {"zero", 0, true},
			{"plus1", 30 * time.Second, true}, {"plus2", 60 * time.Second, false}} {
			if _, _, err := enrol(c.name, c.off); (err == nil) != c.ok || err != nil && !errors.Is(err, auth.ErrWrongCode) {
				t.Errorf("enrolment with a code %v off: %v", c.off, err)
			}
		}
		// Enrolled ten minutes ago; now the window is around now.
		now = now.Add(-10 * time.Minute)
		u, secret, err := enrol("verify", 0)
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(10 * time.Minute)
		for _, c := range []struct {
			off time.Duration
			ok  bool
		}{{-60 * time.Second, false}, {60 * time.Second, false}, {-30 * time.Second, true}, {-30 * time.Second, false},
			{0, true}, {-30 * time.Second, false}, {0, false}, {30 * time.Second, true}, {30 * time.Second, false}} {
			if err := m.Verify(ctx, u.ID, code(t, secret, now.Add(c.off))); (err == nil) != c.ok {
				t.Errorf("code %v off: %v, want ok=%v", c.off, err, c.ok)
			}
		}
		for _, bad := range []string{"", "12345", "1234567", "abcdef", " 12345"} {
			if err := m.Verify(ctx, u.ID, bad); !errors.Is(err, auth.ErrWrongCode) {
				t.Errorf("code %q: %v", bad, err)
			}
		}
		// A user without MFA has no code to give.
		if err := m.Verify(ctx, 999999, code(t, secret, now)); err == nil {
			t.Error("unknown user verified")
		}
	})
}

// TestRecoveryCodesOnce: each recovery code works once, new ones replace
// the old, and turning MFA off voids them.
func TestRecoveryCodesOnce(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		secrets, _ := store.NewSecrets(bytes.Repeat([]byte{7}, 32))
		now := time.Date(2027, 1, 4, 8, 0, 15, 0, time.UTC)
		m := &auth.MFA{Store: st, Secrets: secrets, Now: func() time.Time { return now }}
		u, err := st.CreateUser(ctx, "ann", "password-1234", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.Begin(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		codes, err := m.Confirm(ctx, u.ID, code(t, e.Secret, now))
		if err != nil || len(codes) != 10 {
			t.Fatalf("confirm: %v %v", codes, err)
		}
		seen := map[string]bool{}
		for _, c := range codes {
			if len(c) != 19 || seen[c] {
				t.Errorf("recovery code %q", c)
			}
			seen[c] = true
		}
		if err := m.Recover(ctx, u.ID, codes[0]); err != nil {
			t.Fatal(err)
		}
		if err := m.Recover(ctx, u.ID, codes[0]); !errors.Is(err, auth.ErrWrongCode) {
			t.Errorf("a recovery code twice: %v", err)
		}
		fresh, err := m.NewRecoveryCodes(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Recover(ctx, u.ID, codes[1]); !errors.Is(err, auth.ErrWrongCode) {
			t.Errorf("a replaced recovery code: %v", err)
		}
		if _, err := st.DisableMFA(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if err := m.Recover(ctx, u.ID, fresh[0]); !errors.Is(err, auth.ErrWrongCode) {
			t.Errorf("a recovery code after MFA went off: %v", err)
		}
		if st, err := st.MFAState(ctx, u.ID); err != nil || st.Enabled || st.Secret != nil || st.RecoveryLeft != 0 {
			t.Errorf("state after off: %+v %v", st, err)
		}
	})
}
