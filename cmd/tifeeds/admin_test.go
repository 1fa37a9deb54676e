package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/store"
)

func TestUsersAndAPIKeysCommands(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "t.db")
	var out, errOut bytes.Buffer
	if err := run([]string{"users", "create", "--db", dsn, "--username", "ops", "--scope", "root"}, &out, &errOut); err != nil {
		t.Fatalf("users create: %v %s", err, errOut.String())
	}
	password, key := field(out.String(), "password:"), field(out.String(), "API key:")
	if password == "" || !strings.HasPrefix(key, "tif_") {
		t.Fatalf("users create printed %q", out.String())
	}
	out.Reset()
	if err := run([]string{"apikeys", "create", "--db", dsn, "--username", "ops", "--name", "ci"}, &out, &errOut); err != nil {
		t.Fatalf("apikeys create: %v", err)
	}
	second := strings.TrimSpace(out.String())

	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CheckPassword(ctx, "ops", password); err != nil {
		t.Errorf("printed password does not sign in: %v", err)
	}
	for _, k := range []string{key, second} {
		if u, err := st.CheckAPIKey(ctx, "ops", k); err != nil || u.Scope != store.ScopeRoot {
			t.Errorf("printed key %q: %v %v", k, u, err)
		}
	}

	tenant, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some("Acme")}, store.TenantRules{})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run([]string{"users", "create", "--db", dsn, "--username", "analyst", "--scope", "tenant", "--tenant", tenant.ID}, &out, &errOut); err != nil {
		t.Errorf("users create for an existing tenant: %v", err)
	}

	for name, args := range map[string][]string{
		"duplicate user":       {"users", "create", "--db", dsn, "--username", "ops"},
		"tenant without id":    {"users", "create", "--db", dsn, "--username", "t1", "--scope", "tenant"},
		"unknown tenant":       {"users", "create", "--db", dsn, "--username", "t2", "--scope", "tenant", "--tenant", "no-such-tenant"},
		"key for unknown user": {"apikeys", "create", "--db", dsn, "--username", "nobody"},
		"missing username":     {"apikeys", "create", "--db", dsn},
	} {
		if err := run(args, &out, &errOut); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func field(out, label string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), label); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
