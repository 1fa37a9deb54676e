package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// syncBuffer is a bytes.Buffer safe to read while serve writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServe runs `tifeeds serve` configured only through TIFEEDS_*
// variables, checks health and the admin's GraphQL access, then stops it the
// way SIGTERM does (context cancellation) and expects a clean return.
func TestServe(t *testing.T) {
	for name, dsn := range map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "t.db") },
		"postgres": func(t *testing.T) string { return storetest.NewPostgresDSN(t) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Chdir(t.TempDir()) // the secret key file goes to ./data on PostgreSQL
			addr := freeAddr(t)
			t.Setenv("TIFEEDS_ADDR", addr)
			t.Setenv("TIFEEDS_DB", dsn(t))
			t.Setenv("TIFEEDS_ADMIN_PASSWORD", "")
			t.Setenv("TIFEEDS_ADMIN_API_KEY", "")
			t.Setenv("TIFEEDS_LOG_FORMAT", "json")
			t.Setenv("TIFEEDS_METRICS_TOKEN", "metrics-token-0123456789")
			// The built-in feeds run at start: never against the real vendors.
			t.Setenv("TIFEEDS_FEED_MIRROR", vendortest.New(t).URL)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stdout, stderr syncBuffer
			done := make(chan error, 1)
			go func() { done <- serve(ctx, nil, &stdout, &stderr) }()

			base := "http://" + addr
			waitHealthy(t, base, done)
			key := ""
			for _, line := range strings.Split(stdout.String(), "\n") {
				if f := strings.Fields(line); len(f) == 3 && f[0] == "API" && f[1] == "key:" {
					key = f[2]
				}
			}
			if key == "" || !strings.Contains(stdout.String(), "password:") {
				t.Fatalf("first start printed no generated credentials:\n%s", stdout.String())
			}
			if !strings.Contains(stderr.String(), `"msg":"Serving"`) {
				t.Errorf("--log-format from TIFEEDS_LOG_FORMAT not applied:\n%s", stderr.String())
			}
			query := strings.NewReader(`{"query":"{ me { username } }"}`)
			req, _ := http.NewRequest("POST", base+"/graphql", query)
			req.SetBasicAuth("admin", key)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Errorf("admin me: %d", res.StatusCode)
			}

			for token, want := range map[string]int{"": 401, "metrics-token-0123456789": 200} {
				req, _ := http.NewRequest("GET", base+"/metrics", nil)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != want {
					t.Errorf("/metrics with TIFEEDS_METRICS_TOKEN set, token %q: %d, want %d", token, res.StatusCode, want)
				}
			}

			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve returned %v after shutdown", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("serve did not stop after its context was cancelled")
			}
			if !strings.Contains(stderr.String(), "Shutting down") {
				t.Errorf("no shutdown log:\n%s", stderr.String())
			}
		})
	}
}

func waitHealthy(t *testing.T, base string, done <-chan error) {
	t.Helper()
	for i := 0; i < 200; i++ {
		select {
		case err := <-done:
			t.Fatalf("serve exited early: %v", err)
		default:
		}
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("server never became healthy")
}

func TestFlagValidation(t *testing.T) {
	for name, args := range map[string][]string{
		"bad edition":        {"--edition", "cloud"},
		"bad log format":     {"--log-format", "xml"},
		"cert without key":   {"--tls-cert", "c.pem"},
		"stray argument":     {"extra"},
		"bad feed mirror":    {"--feed-mirror", "ftp://mirror.example.com"},
		"bad allowed host":   {"--allowed-hosts", "https://tifeeds.example.com/"},
		"no audit retention": {"--audit-retention-days", "0"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := serve(context.Background(), args, &out, &errOut); err == nil {
				t.Errorf("serve %v succeeded", args)
			}
		})
	}
}

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"version"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "tifeeds ") {
		t.Errorf("version printed %q", out.String())
	}
	if err := run([]string{"frobnicate"}, &out, &errOut); err == nil {
		t.Error("unknown command accepted")
	}
}
