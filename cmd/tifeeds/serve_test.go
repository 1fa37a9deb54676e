package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestFeedAllowPrivateEnvValidated(t *testing.T) {
	t.Setenv("TIFEEDS_FEED_ALLOW_PRIVATE", "maybe")
	var out, errOut bytes.Buffer
	err := serve(context.Background(), nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "TIFEEDS_FEED_ALLOW_PRIVATE") {
		t.Fatalf("serve with TIFEEDS_FEED_ALLOW_PRIVATE=maybe: %v", err)
	}
}

func TestWarmCacheEnvValidated(t *testing.T) {
	t.Setenv("TIFEEDS_WARM_CACHE", "sometimes")
	var out, errOut bytes.Buffer
	err := serve(context.Background(), nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "TIFEEDS_WARM_CACHE") {
		t.Fatalf("serve with TIFEEDS_WARM_CACHE=sometimes: %v", err)
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
