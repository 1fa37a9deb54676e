package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestSAMLRequestsAndAssertions(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		now := time.Now()
		if err := st.SaveSAMLRequest(ctx, "tenant-a", "id-1", now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := st.SaveSAMLRequest(ctx, "tenant-a", "id-old", now.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		// Another tenant cannot take it; an expired one is gone; taken once.
		if err := st.TakeSAMLRequest(ctx, "tenant-b", "id-1"); !errors.Is(err, store.ErrSAMLReplayed) {
			t.Errorf("another tenant took the request: %v", err)
		}
		if err := st.TakeSAMLRequest(ctx, "tenant-a", "id-old"); !errors.Is(err, store.ErrSAMLReplayed) {
			t.Errorf("an expired request was taken: %v", err)
		}
		if err := st.TakeSAMLRequest(ctx, "tenant-a", "id-1"); err != nil {
			t.Errorf("take: %v", err)
		}
		if err := st.TakeSAMLRequest(ctx, "tenant-a", "id-1"); !errors.Is(err, store.ErrSAMLReplayed) {
			t.Errorf("a request was taken twice: %v", err)
		}

		if err := st.UseSAMLAssertion(ctx, "tenant-a", "as-1", now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := st.UseSAMLAssertion(ctx, "tenant-a", "as-1", now.Add(time.Minute)); !errors.Is(err, store.ErrSAMLReplayed) {
			t.Errorf("an assertion was used twice: %v", err)
		}
		// An expired record is swept by the next insert; its id may come
		// again (crewjam refuses the expired assertion itself).
		if err := st.UseSAMLAssertion(ctx, "tenant-a", "as-2", now.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := st.UseSAMLAssertion(ctx, "tenant-a", "as-3", now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := st.DB.NewRaw("SELECT COUNT(*) FROM saml_assertions WHERE assertion_id = 'as-2'").Scan(ctx, &n); err != nil || n != 0 {
			t.Errorf("expired assertion records left: %d, %v", n, err)
		}
	})
}

// TestSAMLRequestsBounded: a tenant holds at most MaxPendingSAMLRequests
// live requests (each anonymous GET of its login URL stores one); expired
// ones do not count, and other tenants are not concerned.
func TestSAMLRequestsBounded(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		_, err := st.DB.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO saml_requests (id, tenant_id, expires_at) SELECT 'r' || i, 'tenant-c', ? FROM n`,
			store.MaxPendingSAMLRequests, time.Now().Add(time.Minute).UTC())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SaveSAMLRequest(ctx, "tenant-c", "one-more", time.Now().Add(time.Minute)); !errors.Is(err, store.ErrSAMLBusy) {
			t.Errorf("past the bound: %v, want ErrSAMLBusy", err)
		}
		if err := st.SaveSAMLRequest(ctx, "tenant-d", "other", time.Now().Add(time.Minute)); err != nil {
			t.Errorf("another tenant: %v", err)
		}
		if _, err := st.DB.ExecContext(ctx, `UPDATE saml_requests SET expires_at = ? WHERE id = 'r1'`, time.Now().Add(-time.Second).UTC()); err != nil {
			t.Fatal(err)
		}
		if err := st.SaveSAMLRequest(ctx, "tenant-c", "one-more", time.Now().Add(time.Minute)); err != nil {
			t.Errorf("after one expired: %v", err)
		}
	})
}

func TestSSOUser(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some("A")}, store.TenantRules{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some("B")}, store.TenantRules{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateUser(ctx, "root2", "root-password", store.ScopeRoot, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateUser(ctx, "bee", "bee-password", store.ScopeTenant, &b.ID); err != nil {
			t.Fatal(err)
		}
		u, created, err := st.SSOUser(ctx, a.ID, "ann")
		if err != nil || !created || u.Scope != store.ScopeTenant || *u.TenantID != a.ID || !u.Enabled {
			t.Fatalf("JIT = %+v %v %v", u, created, err)
		}
		if _, err := st.CheckPassword(ctx, "ann", "!sso"); !errors.Is(err, store.ErrBadCredentials) {
			t.Errorf("the JIT user's password hash works as a password: %v", err)
		}
		again, created, err := st.SSOUser(ctx, a.ID, "ann")
		if err != nil || created || again.ID != u.ID {
			t.Errorf("second = %+v %v %v", again, created, err)
		}
		if tn, _ := st.Tenant(ctx, a.ID); tn.UserNum != 1 {
			t.Errorf("user_num = %d after a JIT user", tn.UserNum)
		}
		for _, name := range []string{"root2", "bee"} {
			if _, _, err := st.SSOUser(ctx, a.ID, name); !errors.Is(err, store.ErrSSONameTaken) {
				t.Errorf("%s: %v, want ErrSSONameTaken", name, err)
			}
		}
		if _, err := st.SetUserEnabled(ctx, u.ID, false); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.SSOUser(ctx, a.ID, "ann"); !errors.Is(err, store.ErrSSOUserDisabled) {
			t.Errorf("disabled: %v", err)
		}
		for _, bad := range []string{"", "a b", "x:y", " ann"} {
			var ve *store.ValidationError
			if _, _, err := st.SSOUser(ctx, a.ID, bad); !errors.As(err, &ve) {
				t.Errorf("%q: %v, want a validation error", bad, err)
			}
		}
	})
}

func TestSSOConfigValidation(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		for _, v := range []string{"", store.IdPCallbackSPInitiated, store.IdPCallbackIdPInitiated} {
			in := store.TenantInput{Name: store.Some("t"), SSOConfig: store.Some(store.SSOConfig{IdpCallbackType: &v})}
			if _, err := st.CreateTenant(ctx, in, store.TenantRules{}); err != nil {
				t.Errorf("%q: %v", v, err)
			}
		}
		post := "post"
		in := store.TenantInput{Name: store.Some("t"), SSOConfig: store.Some(store.SSOConfig{IdpCallbackType: &post})}
		var ve *store.ValidationError
		if _, err := st.CreateTenant(ctx, in, store.TenantRules{}); !errors.As(err, &ve) || ve.Field != "ssoConfig" {
			t.Errorf("post: %v", err)
		}
	})
}
