package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// tenantGET compares 16 clients getting one tenant with a bare handler
// answering the same bytes to 16 clients.
func (b *readBench) tenantGET(ctx context.Context, clients int, d time.Duration) error {
	path := "/connect/api/v1/tenants/" + b.tenant
	req, _ := http.NewRequestWithContext(ctx, "GET", b.url+path, nil)
	req.SetBasicAuth(benchAdmin, benchAdminKey)
	res, err := b.client.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, res.StatusCode, body)
	}
	ctype := res.Header.Get("Content-Type")
	bareURL, stopBare, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Write(body)
	}))
	if err != nil {
		return err
	}
	defer stopBare()
	if path := os.Getenv(tenantProfileEnv); path != "" {
		if err := profile(path, func() error {
			_, err := b.hammer(ctx, b.url, "/connect/api/v1/tenants/"+b.tenant, clients, d)
			return err
		}); err != nil {
			return err
		}
	}
	var s sideBySide
	for range b.runs {
		bare, err := b.hammer(ctx, bareURL, path, clients, d)
		if err != nil {
			return err
		}
		ours, err := b.hammer(ctx, b.url, path, clients, d)
		if err != nil {
			return err
		}
		s.add(1/ours, 1/bare) // seconds per request
	}
	fmt.Printf("  GET tenant x%d  %8.0f req/s vs bare net/http %8.0f req/s   ratio %5.2f (target >= 0.50; each run: %s)\n",
		clients, 1/median(s.ours), 1/median(s.base), s.ratio(), s.each())
	return nil
}

// hammer sends GETs of path from clients goroutines for d and returns the
// rate of answers.
func (b *readBench) hammer(ctx context.Context, base, path string, clients int, d time.Duration) (float64, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}}
	defer client.CloseIdleConnections()
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if _, err := b.get(ctx, client, base, path, nil); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds(), firstErr
}

// tenantProfileEnv, when set, names the file where a CPU profile of one
// tenant GET run (clients and server together) is written.
const tenantProfileEnv = "TIFEEDS_BENCH_TENANT_PROFILE"
