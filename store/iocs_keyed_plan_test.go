package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestKeyedPagesWalkTheKeysOnPostgres: a first page in score order walks
// ioc_score_keys in its order and probes iocs per key, however unlikely
// the planner's statistics make it that a key holds. Once every IoC row
// had a change stamp of its own, PostgreSQL expected one key in ten
// thousand to hold and walked all of iocs instead, probing the keys by id
// and sorting (1.3-2.8 s a first page at 1,000,000 IoCs).
func TestKeyedPagesWalkTheKeysOnPostgres(t *testing.T) {
	s := storetest.NewPostgres(t)
	ctx := context.Background()
	feed := newFeed(t, s, "a")
	for b := range 4 {
		inds := make([]ioc.Indicator, 5000)
		for i := range inds {
			inds[i] = dom(fmt.Sprintf("h%d-%d.example", b, i), "src", i%100)
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Duration(b) * time.Minute), Retention: 10 * day, Indicators: inds})
	}
	catchUpAll(t, s.CatchUpKeys, 50_000)
	if _, err := s.DB.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}

	// The page's statements as the store sends them, its plan settings
	// included, replayed under EXPLAIN.
	sent := recordStatements(s)
	if _, err := s.IoCs(ctx, store.IoCFilter{}, store.IoCOrder{Field: store.IoCOrderScore}, 100, ""); err != nil {
		t.Fatal(err)
	}
	pageSent := sent()
	var settings, page string
	for _, q := range pageSent {
		switch {
		case strings.HasPrefix(q, "SET LOCAL"):
			settings = q
		case strings.Contains(q, "ioc_score_keys") && strings.Contains(q, "UNION ALL"):
			page = q
		}
	}
	if settings == "" || page == "" {
		t.Fatalf("no keyed page among the statements sent:\n%s", strings.Join(pageSent, "\n"))
	}
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, settings); err != nil {
		t.Fatal(err)
	}
	var plan string
	if err := tx.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+page).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var keysRead []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n["Relation Name"] == "ioc_score_keys" {
			keysRead = append(keysRead, fmt.Sprint(n["Node Type"], " using ", n["Index Name"]))
		}
		plans, _ := n["Plans"].([]any)
		for _, p := range plans {
			walk(p.(map[string]any))
		}
	}
	var doc []map[string]map[string]any
	if err := json.Unmarshal([]byte(plan), &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc[0]["Plan"])
	if len(keysRead) != 1 || keysRead[0] != "Index Scan using ioc_score_keys_pkey" {
		t.Errorf("the first page reads ioc_score_keys by %v, want one walk of its (key, id) index\n%s", keysRead, plan)
	}
}

// recordStatements records the statements s sends from now on; the
// function it returns takes those recorded since the last call.
func recordStatements(s *store.Store) func() []string {
	var (
		mu   sync.Mutex
		sent []string
	)
	s.DB.AddQueryHook(queryRecorder(func(q string) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, q)
	}))
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		taken := sent
		sent = nil
		return taken
	}
}

// queryRecorder is a bun query hook that hands each statement to record.
type queryRecorder func(query string)

func (r queryRecorder) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (r queryRecorder) AfterQuery(_ context.Context, e *bun.QueryEvent) { r(e.Query) }

// A filter of one key condition whose keys are many is counted through
// them, not on iocs' columns: a count on the columns walked the ids from
// the start and read nearly all of them when the matches were the newest
// IoCs (expiresBefore while a sweep expired the short-lived ones: 2.8 s
// at 10,000,000). The statement that counts reads ioc_expires_keys, and
// the count is the one the rows give.
func TestManyKeysCountThroughTheKeys(t *testing.T) {
	s := storetest.NewPostgres(t)
	ctx := context.Background()
	long, short := newFeed(t, s, "long"), newFeed(t, s, "short")
	var inds []ioc.Indicator
	for i := range 30 {
		inds = append(inds, dom(fmt.Sprintf("l%d.example", i), "src", 10))
	}
	apply(t, s, store.Batch{FeedID: long, Now: t0, Retention: 30 * day, Indicators: inds})
	inds = nil
	for i := range 12 {
		inds = append(inds, dom(fmt.Sprintf("s%d.example", i), "src", 10))
	}
	apply(t, s, store.Batch{FeedID: short, Now: t0, Retention: day, Indicators: inds})
	catchUpAll(t, s.CatchUpKeys, 1000)
	savedSparse := *store.SparseKeys
	*store.SparseKeys, s.IoCCountCap = 5, 10
	defer func() { *store.SparseKeys, s.IoCCountCap = savedSparse, 0 }()
	recorded := recordStatements(s)
	before := t0.Add(2 * day)
	page, err := s.IoCs(ctx, store.IoCFilter{ExpiresBefore: &before}, store.IoCOrder{}, 5, "")
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 10 || !page.TotalCapped {
		t.Errorf("total %d, capped %v; want 10 (the cap) and capped: 12 match", page.Total, page.TotalCapped)
	}
	sent := recorded()
	counted := false
	for _, q := range sent {
		if strings.Contains(q, "count(*)") && strings.Contains(q, `"ioc_expires_keys" AS x`) {
			counted = true
		}
	}
	if !counted {
		t.Errorf("no count through ioc_expires_keys among the statements sent:\n%s", strings.Join(sent, "\n"))
	}
}
