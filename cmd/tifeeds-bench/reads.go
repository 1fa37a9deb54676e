package main

// The read paths of issue 14, each beside what the database (or net/http)
// does alone with the same rows or bytes, on a store of the main TSV file's
// IoCs: exports, an authenticated REST GET under concurrency, lookupIocs and
// the first page of iocs in every order and under each single filter.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
)

const (
	benchAdmin    = "admin"
	benchAdminKey = "bench-admin-api-key-0123456789abcdef"
	// rareTag is set on 1% of the IoCs so that the tag filter is measured
	// selective as well as matching everything (tsv.Tag).
	rareTag = "bench_rare"
	// benchSearch is the search the pages are measured with: 22 IoCs.
	benchSearch = "ost-4242"
	// pageTarget is issue 14's bound on the first page of iocs.
	pageTarget = 50 * time.Millisecond
)

// readBench is one database's store, with tifeeds serving it on loopback.
type readBench struct {
	name    string // "SQLite" or "PostgreSQL"
	dsn     string // store DSN
	st      *store.Store
	url     string
	client  *http.Client
	stop    func()
	tenant  string
	feedID  int64
	runs    int
	baseCLI func(ctx context.Context, query string) (int64, error) // runs query in the database's CLI; bytes out
}

// readsFor builds the store at dsn from file (ingested as a TSV run does),
// then serves it.
func readsFor(ctx context.Context, name, dsn, file string, batch, runs int) (*readBench, error) {
	start := time.Now()
	ing, err := ingestChildEnv(dsn, file, batch, []string{rareTagEnv + "=1"})
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	b := &readBench{name: name, dsn: dsn, st: st, runs: runs}
	if err := b.prepare(ctx); err != nil {
		st.Close()
		return nil, err
	}
	fmt.Printf("%s read store: %d IoCs, built in %.1f s\n", name, ing.Stored, time.Since(start).Seconds())
	return b, nil
}

func (b *readBench) prepare(ctx context.Context) error {
	if err := b.setUp(ctx); err != nil {
		return err
	}
	// Before the key indexer has run, the keyed pages read the run's IoCs
	// from iocs: what they cost then, for the record.
	before := map[string]store.IoCFilter{"SCORE DESC": {}, "tag (1%)": {Tag: rareTag}, "search": {Search: benchSearch}}
	for _, name := range []string{"SCORE DESC", "tag (1%)", "search"} {
		o := store.IoCOrder{}
		if name == "SCORE DESC" {
			o = store.IoCOrder{Field: store.IoCOrderScore, Desc: true}
		}
		start := time.Now()
		if _, err := b.st.IoCs(ctx, before[name], o, 100, ""); err != nil {
			return err
		}
		fmt.Printf("%s before the key indexer: first page %-10s %6.1f ms (store call)\n", b.name, name,
			float64(time.Since(start).Microseconds())/1000)
	}
	if err := b.catchUp(ctx); err != nil {
		return err
	}
	return b.startServer()
}

// setUp gives the store the bench's admin and a tenant, and checks that
// it holds the rare tag.
func (b *readBench) setUp(ctx context.Context) error {
	if _, err := b.st.EnsureAdmin(ctx, benchAdmin, "bench-admin-password", benchAdminKey); err != nil {
		return err
	}
	// The tenant of an earlier measurement of the same store (make
	// bench-scale's sizes), or a new one.
	if err := b.st.DB.NewRaw("SELECT id FROM tenants WHERE name = ?", "Bench tenant").Scan(ctx, &b.tenant); errors.Is(err, sql.ErrNoRows) {
		t, err := b.st.CreateTenant(ctx, store.TenantInput{Name: store.Some("Bench tenant")}, store.TenantRules{})
		if err != nil {
			return err
		}
		b.tenant = t.ID
	} else if err != nil {
		return err
	}
	if err := b.st.DB.NewRaw("SELECT id FROM feeds ORDER BY id LIMIT 1").Scan(ctx, &b.feedID); err != nil {
		return err
	}
	// The ingest children tagged 1% of the IoCs (rareTagEnv).
	var rare int64
	if err := b.st.DB.NewRaw("SELECT coalesce((SELECT n FROM ioc_count_tags WHERE tag = ?), 0)", rareTag).Scan(ctx, &rare); err != nil {
		return err
	}
	if rare == 0 {
		return fmt.Errorf("no IoC is tagged %s: was the store built by an older bench?", rareTag)
	}
	return nil
}

// catchUp runs the key indexer until the key tables hold every IoC, as it
// does in the first quiet seconds after a run, then, on PostgreSQL,
// refreshes the planner's statistics as autovacuum soon does. SQLite's
// are left as the service leaves them, never gathered: an ANALYZE here
// measured plans that no store had (every first prefix page after a
// restart at 1,000,000 IoCs, before this ANALYZE, read the whole index).
func (b *readBench) catchUp(ctx context.Context) error {
	start := time.Now()
	for caught := false; !caught; {
		var err error
		if caught, err = b.st.CatchUpKeys(ctx, store.DefaultKeyChunk); err != nil {
			return err
		}
	}
	fmt.Printf("%s key tables caught up in %.1f s\n", b.name, time.Since(start).Seconds())
	if b.st.Dialect == store.Postgres {
		if _, err := b.st.DB.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
			return err
		}
	}
	return nil
}

// startServer serves the store on loopback as tifeeds does.
func (b *readBench) startServer() error {
	cfg := server.DefaultConfig()
	srv := server.New(cfg, b.st, &graph.Resolver{Store: b.st, Events: events.NewBus()}, slog.New(slog.DiscardHandler))
	url, stop, err := serve(srv.Handler())
	if err != nil {
		return err
	}
	b.url, b.stop = url, stop
	b.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	return nil
}

func (b *readBench) close() {
	if b.stop != nil {
		b.stop()
	}
	b.st.Close()
}

// serve serves h on a loopback port until stop.
func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return "http://" + ln.Addr().String(), func() { hs.Close() }, nil
}

// get fetches path as the admin and returns the bytes of the body.
func (b *readBench) get(ctx context.Context, client *http.Client, base, path string, body []byte) (int64, error) {
	method := "GET"
	var rd io.Reader
	if body != nil {
		method, rd = "POST", bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth(benchAdmin, benchAdminKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 500))
		return 0, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, msg)
	}
	return io.Copy(io.Discard, res.Body)
}

// graphql posts query and decodes its data into out (nil: discarded),
// failing on GraphQL errors.
func (b *readBench) graphql(ctx context.Context, query string, vars map[string]any, out any) error {
	raw, err := b.graphqlRaw(ctx, query, vars)
	if err != nil {
		return err
	}
	return decodeGraphQL(raw, out)
}

// graphqlRaw posts a query as the admin and returns the answer's bytes.
func (b *readBench) graphqlRaw(ctx context.Context, query string, vars map[string]any) ([]byte, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequestWithContext(ctx, "POST", b.url+"/graphql", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(benchAdmin, benchAdminKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("graphql: %d: %.200s", res.StatusCode, raw)
	}
	return raw, nil
}

// decodeGraphQL reads a GraphQL answer's data into out (nil: only its errors).
func decodeGraphQL(raw []byte, out any) error {
	var env struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("graphql: %w", err)
	}
	if len(env.Errors) > 0 {
		return fmt.Errorf("graphql: %s", env.Errors[0].Message)
	}
	if out != nil {
		return json.Unmarshal(env.Data, out)
	}
	return nil
}

// sideBySide is interleaved measurements of tifeeds and its baseline.
type sideBySide struct{ ours, base []float64 }

func (s *sideBySide) add(ours, base float64) {
	s.ours, s.base = append(s.ours, ours), append(s.base, base)
}

// ratio is baseline time over ours (1 means as fast as the baseline).
func (s *sideBySide) ratio() float64 { return median(s.base) / median(s.ours) }

func (s *sideBySide) each() string {
	rs := make([]float64, len(s.ours))
	for i := range s.ours {
		rs[i] = s.base[i] / s.ours[i]
	}
	return formatRatios(rs)
}

func timed(fn func() error) (float64, error) {
	start := time.Now()
	err := fn()
	return time.Since(start).Seconds(), err
}

func profile(path string, fn func() error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	return fn()
}

// readParts and benchDBs are the -parts and -dbs flags: which read paths are
// measured, on which databases (benchDBs also picks the TSV ingestions).
var readParts, benchDBs map[string]bool

// runReads measures every read path on one database.
func runReads(ctx context.Context, name, dsn, file string, batch, runs int) error {
	b, err := readsFor(ctx, name, dsn, file, batch, runs)
	if err != nil {
		return err
	}
	defer b.close()
	return b.measure(ctx)
}

// measure measures every read path of -parts on the served store.
func (b *readBench) measure(ctx context.Context) error {
	fmt.Printf("%s read paths (medians of %d interleaved runs; ratio = baseline time / tifeeds time)\n", b.name, b.runs)
	if readParts["exports"] {
		if err := b.exports(ctx); err != nil {
			return err
		}
	}
	if readParts["taxii"] {
		if err := b.taxii(ctx); err != nil {
			return err
		}
	}
	if readParts["tenant"] {
		if err := b.tenantGET(ctx, 16, 2*time.Second); err != nil {
			return err
		}
	}
	if readParts["lookup"] {
		if err := b.lookups(ctx, 10_000); err != nil {
			return err
		}
	}
	if readParts["overview"] {
		if err := b.overview(ctx); err != nil {
			return err
		}
	}
	if !readParts["pages"] {
		return nil
	}
	missed, err := b.pages(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("  pages over %.0f ms: %d (%s)\n\n", pageTarget.Seconds()*1e3, len(missed), strings.Join(missed, ", "))
	return nil
}
