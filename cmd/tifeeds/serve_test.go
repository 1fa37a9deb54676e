package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A boolean setting that is neither true nor false stops serve, naming it.
func TestBooleanEnvValidated(t *testing.T) {
	for name, value := range map[string]string{"TIFEEDS_FEED_ALLOW_PRIVATE": "maybe", "TIFEEDS_WARM_CACHE": "sometimes"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			var out, errOut bytes.Buffer
			err := serve(context.Background(), nil, &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("serve with %s=%s: %v", name, value, err)
			}
		})
	}
}

// A bad SMTP URL stops serve before it opens anything, and the error never
// quotes the password the URL or the environment carries.
func TestSMTPSettingsValidated(t *testing.T) {
	for _, c := range []struct{ url, password string }{
		{"http://user:s3cret-pw@mail.example.org", ""},
		{"smtp://user:s3cret-pw@", ""},
		{"smtps://mail.example.org", "s3cret-pw"},
	} {
		t.Setenv("TIFEEDS_SMTP_URL", c.url)
		t.Setenv("TIFEEDS_SMTP_PASSWORD", c.password)
		t.Setenv("TIFEEDS_SMTP_FROM", "not an address")
		var out, errOut bytes.Buffer
		err := serve(context.Background(), []string{"--db", "sqlite:" + t.TempDir() + "/t.db"}, &out, &errOut)
		if err == nil || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "smtp") {
			t.Errorf("%s: %v", c.url, err)
		}
	}
}

// A notification lease shorter than an attempt stops serve: a live worker
// would lose the notification it is sending to another, which sends it
// again.
func TestNotifyLeaseValidated(t *testing.T) {
	var out, errOut bytes.Buffer
	err := serve(context.Background(), []string{"--db", "sqlite:" + t.TempDir() + "/t.db", "--notify-lease", "10s"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--notify-lease") {
		t.Fatalf("serve --notify-lease 10s: %v", err)
	}
}
