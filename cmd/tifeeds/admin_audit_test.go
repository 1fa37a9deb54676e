package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/store"
)

func TestCLIUserCommandsAreAudited(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "t.db")
	var out, errOut bytes.Buffer
	if err := run([]string{"users", "create", "--db", dsn, "--username", "ops", "--password", "cli-secret-pw"}, &out, &errOut); err != nil {
		t.Fatalf("users create: %v %s", err, errOut.String())
	}
	if err := run([]string{"apikeys", "create", "--db", dsn, "--username", "ops", "--name", "ci"}, &out, &errOut); err != nil {
		t.Fatalf("apikeys create: %v", err)
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	events, _, err := st.AuditEvents(ctx, store.AuditFilter{Actor: audit.ActorCLI}, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.Action+" "+e.TargetName)
		if strings.Contains(e.Fields, "cli-secret-pw") || strings.Contains(e.Fields, "tif_") || e.ActorID != nil {
			t.Errorf("record %+v shows a secret or a user", e)
		}
	}
	want := "api_key.create ci,api_key.create default,user.create ops"
	if strings.Join(got, ",") != want {
		t.Errorf("CLI records = %v, want %s", got, want)
	}
	if !strings.Contains(events[2].Fields, `"password":"***"`) || !strings.Contains(events[2].Fields, `"scope":"root"`) {
		t.Errorf("user.create fields = %s", events[2].Fields)
	}
}
