package ingest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
)

// clock is a settable clock for the runner.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().UTC()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type harness struct {
	t     *testing.T
	st    *store.Store
	r     *Runner
	m     *feeds.Service // the feed changes of the API, carried out over r
	clock *clock
	reg   *Registry
}

// loopbackClient lets the tests' sources reach their loopback servers,
// which the egress policy refuses by default.
var loopbackClient = egress.NewClient(egress.Options{AllowPrivate: true})

func testSecrets(t testing.TB) *store.Secrets {
	s, err := store.NewSecrets([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newHarness starts a runner on st with TSV sources reading chunks of 2
// lines and the given daily limit (0: the spec's).
func newHarness(t *testing.T, st *store.Store, tsvOpts tsv.Options) *harness {
	t.Helper()
	return newHarnessBatch(t, st, tsvOpts, 3)
}

// newHarnessBatch is newHarness writing batch indicators per transaction.
func newHarnessBatch(t *testing.T, st *store.Store, tsvOpts tsv.Options, batch int) *harness {
	t.Helper()
	return newHarnessWith(t, st, tsvOpts, func(o *Options) { o.BatchSize = batch })
}

// newHarnessWith is newHarness with the runner's options changed by mod.
func newHarnessWith(t *testing.T, st *store.Store, tsvOpts tsv.Options, mod func(*Options)) *harness {
	t.Helper()
	if tsvOpts.ChunkLines == 0 {
		tsvOpts.ChunkLines = 2
	}
	tsvOpts.TempDir = t.TempDir()
	reg := NewRegistryWithClient(loopbackClient)
	reg.Register(tsv.Kind(tsvOpts))
	c := newClock()
	opts := Options{Store: st, Secrets: testSecrets(t), Sources: reg, Now: c.Now, BatchSize: 3,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&opts)
	}
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop(context.Background()) })
	return &harness{t: t, st: st, r: r, m: newService(t, r, opts), clock: c, reg: reg}
}

// tsvServer serves body (changeable) at /feed.tsv, with basic auth when
// user is set; gate, when set, is waited on before answering.
type tsvServer struct {
	*httptest.Server
	mu       sync.Mutex
	body     string
	user     string
	pass     string
	gate     chan struct{}
	started  chan struct{}
	requests atomic.Int64
}

func newTSVServer(t *testing.T, body string) *tsvServer {
	s := &tsvServer{body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		body, user, pass, gate, started := s.body, s.user, s.pass, s.gate, s.started
		s.mu.Unlock()
		if started != nil {
			started <- struct{}{}
		}
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		if user != "" {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		if r.URL.Path != "/feed.tsv" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *tsvServer) set(f func(s *tsvServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func ipRows(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "ip\t198.18.%d.%d\tsrc\t%d\n", i/256, i%256, 50+i%50)
	}
	return b.String()
}

func (h *harness) create(url string, mod func(*feeds.CustomFeedInput)) *store.Feed {
	h.t.Helper()
	in := feeds.CustomFeedInput{Category: store.CategoryTSV, Name: "feed", CollectionURL: url,
		PollingFrequency: 4, RetentionPeriod: 30}
	if mod != nil {
		mod(&in)
	}
	f, err := h.m.CreateCustomFeed(context.Background(), in)
	if err != nil {
		h.t.Fatalf("create feed: %v", err)
	}
	return f
}

func (h *harness) feed(id int64) *store.Feed {
	h.t.Helper()
	f, err := h.st.Feed(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return f
}

func (h *harness) runNow(id int64) *store.FeedRun {
	h.t.Helper()
	if _, err := h.m.RunNow(context.Background(), id); err != nil {
		h.t.Fatal(err)
	}
	h.r.Wait()
	return h.lastRun(id)
}

func (h *harness) lastRun(id int64) *store.FeedRun {
	h.t.Helper()
	run, err := h.st.LastRun(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return run
}

func (h *harness) runs(id int64) []store.FeedRun {
	h.t.Helper()
	runs, err := h.st.FeedRuns(context.Background(), id, 100)
	if err != nil {
		h.t.Fatal(err)
	}
	return runs
}

func (h *harness) count(query string, args ...any) int {
	h.t.Helper()
	var n int
	if err := h.st.DB.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		h.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// checkConsistent asserts the store's invariants: every sighting's IoC
// exists, every IoC has a sighting, and each IoC's score and expiry are
// those of its sightings.
func checkConsistent(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	var n int
	// Joins rather than correlated subqueries: PostgreSQL plans these well
	// on fresh, unanalysed tables.
	queries := map[string]string{
		"sightings without an IoC": `SELECT COUNT(*) FROM sightings s LEFT JOIN iocs i ON i.id = s.ioc_id WHERE i.id IS NULL`,
		"IoCs without a sighting": `SELECT COUNT(*) FROM iocs i LEFT JOIN (SELECT DISTINCT ioc_id FROM sightings) s
			ON s.ioc_id = i.id WHERE s.ioc_id IS NULL`,
		"IoCs with a wrong score or expiry": `SELECT COUNT(*) FROM iocs i JOIN (SELECT ioc_id, MAX(score) AS score,
			MAX(expires_at) AS expires_at FROM sightings GROUP BY ioc_id) s ON s.ioc_id = i.id
			WHERE i.score <> s.score OR i.expires_at <> s.expires_at`,
	}
	for name, q := range queries {
		if err := st.DB.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n != 0 {
			t.Errorf("%d %s", n, name)
		}
	}
}

// newService returns the feed service over r, built from r's options.
func newService(t testing.TB, r *Runner, o Options) *feeds.Service {
	t.Helper()
	m, err := feeds.New(feeds.Options{Store: o.Store, Secrets: o.Secrets, Bus: r.Bus(), Sources: o.Sources,
		Runner: r, Allowlist: r.Allowlist(), Log: r.log})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
