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
