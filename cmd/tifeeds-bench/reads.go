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
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
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
	ing, err := ingestChild(dsn, file, batch)
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
	if _, err := b.st.EnsureAdmin(ctx, benchAdmin, "bench-admin-password", benchAdminKey); err != nil {
		return err
	}
	t, err := b.st.CreateTenant(ctx, store.TenantInput{Name: store.Some("Bench tenant")}, store.TenantRules{})
	if err != nil {
		return err
	}
	b.tenant = t.ID
	if err := b.st.DB.NewRaw("SELECT id FROM feeds ORDER BY id LIMIT 1").Scan(ctx, &b.feedID); err != nil {
		return err
	}
	// A rare tag on 1% of the IoCs, written directly: the TSV gives every
	// IoC the same one.
	tags := `'["` + tsv.Tag + `","` + rareTag + `"]'`
	if b.st.Dialect == store.Postgres {
		tags += "::jsonb"
	}
	// A change like a writer's: a new change stamp on the rows it changes.
	if _, err := b.st.DB.ExecContext(ctx, "UPDATE ioc_stats SET stamp = stamp + 1 WHERE id = 1"); err != nil {
		return err
	}
	if _, err := b.st.DB.ExecContext(ctx, "UPDATE iocs SET tags = "+tags+
		", changed_at = (SELECT stamp FROM ioc_stats WHERE id = 1) WHERE id % 100 = 3"); err != nil {
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
	// What the key indexer does in the first quiet second after a run.
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
	} else if _, err := b.st.DB.ExecContext(ctx, "ANALYZE"); err != nil {
		return err
	}
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

// exportQueries are the rows each export reads, as the store streams them:
// an IoC's sources are its inline sighting's or those of its rows.
func exportQueries(d store.Dialect) map[string]string {
	rows := `(SELECT group_concat(x, ';') FROM (SELECT f.name || '/' || sg.source AS x
	FROM sighting_rows sg JOIN feeds f ON f.id = sg.feed_id WHERE sg.ioc_id = iocs.id
	ORDER BY sg.score DESC, sg.feed_id, sg.source))`
	if d == store.Postgres {
		rows = `(SELECT string_agg(f.name || '/' || sg.source, ';' ORDER BY sg.score DESC, sg.feed_id, sg.source)
	FROM sighting_rows sg JOIN feeds f ON f.id = sg.feed_id WHERE sg.ioc_id = iocs.id)`
	}
	sources := `CASE WHEN iocs.feed_id IS NULL THEN ` + rows + `
	ELSE (SELECT f.name || '/' || iocs.source FROM feeds f WHERE f.id = iocs.feed_id) END`
	return map[string]string{
		"txt": "SELECT type, value FROM iocs ORDER BY id",
		"csv": "SELECT id, type, value, score, tags, first_seen, last_seen, expires_at, " + sources +
			" AS sources FROM iocs ORDER BY id",
	}
}

// cliQuery runs query in the database's own client, its output discarded:
// sqlite3 for SQLite, psql's \copy (COPY ... TO STDOUT) for PostgreSQL.
func (b *readBench) cliQuery(ctx context.Context, query string) error {
	query = strings.Join(strings.Fields(query), " ")
	var cmd *exec.Cmd
	if b.st.Dialect == store.Postgres {
		cmd = exec.CommandContext(ctx, "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", b.dsn,
			"-c", `\copy (`+query+`) to '/dev/null'`)
	} else {
		cmd = exec.CommandContext(ctx, "sqlite3", "-readonly", strings.TrimPrefix(b.dsn, "sqlite:"), query)
		cmd.Stdout = io.Discard
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v: %s", cmd.Path, err, stderr.String())
	}
	return nil
}

func (b *readBench) exports(ctx context.Context) error {
	if _, err := exec.LookPath("psql"); err != nil && b.st.Dialect == store.Postgres {
		return errors.New("the psql command is needed for the export baseline: apt-get install postgresql-client")
	}
	queries := exportQueries(b.st.Dialect)
	for _, format := range []string{"txt", "csv"} {
		var s sideBySide
		var size int64
		for range b.runs {
			base, err := timed(func() error { return b.cliQuery(ctx, queries[format]) })
			if err != nil {
				return err
			}
			ours, err := timed(func() (err error) {
				size, err = b.get(ctx, b.client, b.url, "/api/export/iocs."+format, nil)
				return err
			})
			if err != nil {
				return err
			}
			s.add(ours, base)
		}
		fmt.Printf("  export iocs.%-4s %6.2f s (%.0f MB) vs %-8s %6.2f s   ratio %5.2f (target >= 0.25; each run: %s)\n",
			format, median(s.ours), float64(size)/1e6, cliName(b.st.Dialect), median(s.base), s.ratio(), s.each())
	}
	return nil
}

func cliName(d store.Dialect) string {
	if d == store.Postgres {
		return `\copy`
	}
	return "sqlite3"
}

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

// lookupValues returns n raw values, half of them stored IoCs, with their
// kinds.
func (b *readBench) lookupValues(ctx context.Context, n int) ([]string, []ioc.Kind, error) {
	var known []struct {
		Type  string
		Value string
	}
	stats, err := b.st.IoCStats(ctx)
	if err != nil {
		return nil, nil, err
	}
	step := max(1, int(stats.Count)/(n/2))
	if err := b.st.DB.NewRaw(fmt.Sprintf("SELECT type, value FROM iocs WHERE id %% %d = 7 ORDER BY id LIMIT %d", step, n/2)).
		Scan(ctx, &known); err != nil {
		return nil, nil, err
	}
	var values []string
	var kinds []ioc.Kind
	for i, k := range known {
		values = append(values, k.Value)
		kinds = append(kinds, ioc.Kind(k.Type))
		// An absent value of the same kind beside each known one.
		var v string
		switch ioc.Kind(k.Type) {
		case ioc.Domain:
			v = fmt.Sprintf("absent-%d.example.com", i)
		case ioc.IP:
			v = fmt.Sprintf("12.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		case ioc.URL:
			v = fmt.Sprintf("http://absent-%d.example.org/path?id=%d", i, i)
		case ioc.SHA256:
			v = fmt.Sprintf("f%063x", i)
		case ioc.MD5:
			v = fmt.Sprintf("e%031x", i)
		default:
			return nil, nil, fmt.Errorf("unexpected kind %s", k.Type)
		}
		kind, norm, err := ioc.Detect(v)
		if err != nil || kind != ioc.Kind(k.Type) {
			return nil, nil, fmt.Errorf("absent value %q reads as %s (%v), want %s", v, kind, err, k.Type)
		}
		values = append(values, norm)
		kinds = append(kinds, kind)
	}
	return values, kinds, nil
}

// lookups compares lookupIocs with the database joining the same values
// (all columns read, through the same driver).
func (b *readBench) lookups(ctx context.Context, n int) error {
	values, kinds, err := b.lookupValues(ctx, n)
	if err != nil {
		return err
	}
	const query = `query($v: [String!]!) { lookupIocs(values: $v) { input known type value
	ioc { id type value score tags firstSeen lastSeen expirationDate } } }`
	join := func() (int, error) {
		var rows *sql.Rows
		var err error
		if b.st.Dialect == store.Postgres {
			ks := make([]string, len(kinds))
			for i, k := range kinds {
				ks[i] = string(k)
			}
			rows, err = b.st.DB.DB.QueryContext(ctx, `SELECT i.* FROM unnest($1::text[], $2::text[]) AS v(t, val)
JOIN iocs i ON i.type = v.t AND i.value = v.val COLLATE "C"`, ks, values)
		} else {
			pairs := make([][2]string, len(values))
			for i := range values {
				pairs[i] = [2]string{string(kinds[i]), values[i]}
			}
			j, _ := json.Marshal(pairs)
			rows, err = b.st.DB.QueryContext(ctx, `SELECT i.* FROM json_each(?) AS v
CROSS JOIN iocs i WHERE i.type = v.value ->> 0 AND i.value = v.value ->> 1`, string(j))
		}
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		dest := make([]any, len(cols))
		for i := range dest {
			dest[i] = new(sql.RawBytes)
		}
		found := 0
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return 0, err
			}
			found++
		}
		return found, rows.Err()
	}
	if path := os.Getenv(lookupProfileEnv); path != "" {
		if err := profile(path, func() error {
			for range 10 {
				if err := b.graphql(ctx, query, map[string]any{"v": values}, nil); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	var s sideBySide
	for range b.runs {
		var found int
		base, err := timed(func() (err error) { found, err = join(); return err })
		if err != nil {
			return fmt.Errorf("lookup baseline: %w", err)
		}
		if found != n/2 {
			return fmt.Errorf("lookup baseline found %d of %d values, want %d", found, n, n/2)
		}
		// Timed until the whole answer has arrived, as the baseline until
		// its last row; decoding it is the client's work, checked after.
		var raw []byte
		ours, err := timed(func() (err error) { raw, err = b.graphqlRaw(ctx, query, map[string]any{"v": values}); return err })
		if err != nil {
			return err
		}
		var resp struct{ LookupIocs []struct{ Known bool } }
		if err := decodeGraphQL(raw, &resp); err != nil {
			return err
		}
		known := 0
		for _, r := range resp.LookupIocs {
			if r.Known {
				known++
			}
		}
		if known != n/2 {
			return fmt.Errorf("lookupIocs knew %d of %d values, want %d", known, n, n/2)
		}
		s.add(ours, base)
	}
	fmt.Printf("  lookupIocs %d   %6.0f ms vs the database's join %6.0f ms   %5.2fx (target <= 2x; each run: %s)\n",
		n, median(s.ours)*1e3, median(s.base)*1e3, 1/s.ratio(), s.each())
	return nil
}

// pages times the first page of iocs (100 rows, totalCount) in every order
// and under each single filter.
func (b *readBench) pages(ctx context.Context) (missed []string, err error) {
	const query = `query($f: IocFilter, $o: IocOrder) { iocs(first: 100, filter: $f, orderBy: $o) {
	totalCount nodes { id type value score tags firstSeen lastSeen expirationDate } pageInfo { endCursor hasNextPage } } }`
	type pageCase struct {
		name   string
		filter map[string]any
		order  map[string]any
	}
	cases := []pageCase{{name: "order id (default)"}}
	for _, f := range []string{"VALUE", "TYPE", "SCORE", "FIRST_SEEN", "LAST_SEEN", "EXPIRATION_DATE"} {
		for _, d := range []string{"ASC", "DESC"} {
			cases = append(cases, pageCase{name: "order " + f + " " + d, order: map[string]any{"field": f, "direction": d}})
		}
	}
	now := time.Now().UTC()
	for _, c := range []struct {
		name string
		v    map[string]any
	}{
		{"filter type DOMAIN", map[string]any{"type": []string{"DOMAIN"}}},
		{"filter value", map[string]any{"value": "host-500.example.com"}},
		{"filter valuePrefix", map[string]any{"valuePrefix": "host-12"}},
		{"filter search", map[string]any{"search": benchSearch}},
		{"filter feedId", map[string]any{"feedId": fmt.Sprint(b.feedID)}},
		{"filter tag (every IoC)", map[string]any{"tag": tsv.Tag}},
		{"filter tag (1%)", map[string]any{"tag": rareTag}},
		{"filter minScore 90", map[string]any{"minScore": 90}},
		{"filter expiresBefore +1d", map[string]any{"expiresBefore": now.Add(24 * time.Hour).Format(time.RFC3339)}},
		{"filter expiresAfter now", map[string]any{"expiresAfter": now.Format(time.RFC3339)}},
	} {
		cases = append(cases, pageCase{name: c.name, filter: c.v})
	}
	// Warm once, as a server that has been answering is.
	for _, c := range cases {
		if err := b.graphql(ctx, query, map[string]any{"f": c.filter, "o": c.order}, nil); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	times := make([][]float64, len(cases))
	totals := make([]int, len(cases))
	for range b.runs {
		for i, c := range cases {
			var resp struct {
				Iocs struct {
					TotalCount int
					Nodes      []struct{ ID string }
				}
			}
			secs, err := timed(func() error {
				return b.graphql(ctx, query, map[string]any{"f": c.filter, "o": c.order}, &resp)
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			times[i] = append(times[i], secs)
			totals[i] = resp.Iocs.TotalCount
		}
	}
	for i, c := range cases {
		m := median(times[i])
		mark := "ok"
		if m > pageTarget.Seconds() {
			mark = "MISSED"
			missed = append(missed, c.name)
		}
		fmt.Printf("  page %-26s %7.1f ms  totalCount %8d  %s\n", c.name, m*1e3, totals[i], mark)
	}
	return missed, nil
}

// lookupProfileEnv, when set, names the file where a CPU profile of ten
// lookupIocs calls (the last database's) is written.
const lookupProfileEnv = "TIFEEDS_BENCH_LOOKUP_PROFILE"

// tenantProfileEnv, when set, names the file where a CPU profile of one
// tenant GET run (clients and server together) is written.
const tenantProfileEnv = "TIFEEDS_BENCH_TENANT_PROFILE"

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
	fmt.Printf("%s read paths (medians of %d interleaved runs; ratio = baseline time / tifeeds time)\n", name, runs)
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
