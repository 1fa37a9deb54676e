package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestOrderPagesWalkTheIndexesOnPostgres: on PostgreSQL a first page in
// each order with an index on iocs (SCORE, FIRST_SEEN, LAST_SEEN,
// EXPIRATION_DATE, both ways) walks that index and stops with the page,
// nothing sorted, and the capped count of an expiry range whose matches
// are the newest IoCs walks iocs_expires_idx. The orders' key tables, which the key indexer kept
// behind the writers, never caught up under a constant ingest there
// (docs/decisions.md, "PostgreSQL: the orders on indexes again").
func TestOrderPagesWalkTheIndexesOnPostgres(t *testing.T) {
	s := storetest.NewPostgres(t)
	ctx := context.Background()
	long, short := newFeed(t, s, "long"), newFeed(t, s, "short")
	for b := range 4 {
		inds := make([]ioc.Indicator, 5000)
		for i := range inds {
			inds[i] = dom(fmt.Sprintf("h%d-%d.example", b, i), "src", i%100)
		}
		apply(t, s, store.Batch{FeedID: long, Now: t0.Add(time.Duration(b) * time.Minute), Retention: 30 * day, Indicators: inds})
	}
	// The short-lived IoCs are the newest, at the end of the table.
	soon := make([]ioc.Indicator, 5000)
	for i := range soon {
		soon[i] = dom(fmt.Sprintf("soon%d.example", i), "src", 10)
	}
	apply(t, s, store.Batch{FeedID: short, Now: t0, Retention: day, Indicators: soon})
	if _, err := s.DB.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	sent := recordStatements(s)
	// plan explains the statements sent that contain marker and returns
	// their plans' nodes, each as "type index".
	plan := func(marker string) []string {
		t.Helper()
		var nodes []string
		for _, q := range sent() {
			if strings.Contains(q, marker) && !strings.HasPrefix(q, "EXPLAIN") {
				nodes = append(nodes, planNodes(t, s, q)...)
			}
		}
		return nodes
	}
	for field, index := range map[store.IoCOrderField]string{store.IoCOrderScore: "iocs_score_idx",
		store.IoCOrderFirstSeen: "iocs_first_seen_idx", store.IoCOrderLastSeen: "iocs_last_seen_idx",
		store.IoCOrderExpiresAt: "iocs_expires_idx"} {
		for _, desc := range []bool{false, true} {
			o := store.IoCOrder{Field: field, Desc: desc}
			page, err := s.IoCs(ctx, store.IoCFilter{}, o, 100, "")
			if err != nil || len(page.IoCs) != 100 {
				t.Fatalf("%+v: %d IoCs, %v", o, len(page.IoCs), err)
			}
			nodes := plan("ORDER BY iocs." + string(field))
			want := "Index Scan " + index
			if !slices.Contains(nodes, want) || slices.Contains(nodes, "Sort") {
				t.Errorf("the first page in order %+v is planned as %q, want %q and no sort", o, nodes, want)
			}
		}
	}
	// More short-lived IoCs than the count cap: the capped count walks
	// iocs_expires_idx. Planned unordered, it was a sequential scan that
	// expected the matches spread over the table and read it all.
	s.IoCCountCap = 100
	defer func() { s.IoCCountCap = 0 }()
	before := t0.Add(2 * day)
	page, err := s.IoCs(ctx, store.IoCFilter{ExpiresBefore: &before}, store.IoCOrder{Field: store.IoCOrderID, Desc: true}, 5, "")
	if err != nil || page.Total != 100 || !page.TotalCapped || len(page.IoCs) != 5 || !strings.HasPrefix(page.IoCs[0].Value, "soon") {
		t.Fatalf("expiresBefore: %+v, %v; want 5 short-lived IoCs of more than 100", page, err)
	}
	if nodes := plan("count(*)"); !slices.ContainsFunc(nodes, func(n string) bool { return strings.HasSuffix(n, " iocs_expires_idx") }) {
		t.Errorf("the expiresBefore count is planned as %q, want a walk of iocs_expires_idx", nodes)
	}
}

// planNodes explains q on PostgreSQL, with each of settings SET for it,
// and returns its plan's nodes, each as "type index".
func planNodes(t *testing.T, s *store.Store, q string, settings ...string) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, setting := range settings {
		if _, err := tx.ExecContext(ctx, "SET LOCAL "+setting); err != nil {
			t.Fatal(err)
		}
	}
	var doc string
	if err := tx.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+q).Scan(&doc); err != nil {
		t.Fatal(err)
	}
	var plans []map[string]map[string]any
	if err := json.Unmarshal([]byte(doc), &plans); err != nil {
		t.Fatal(err)
	}
	var nodes []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		node := fmt.Sprint(n["Node Type"])
		if index, ok := n["Index Name"].(string); ok {
			node += " " + index
		}
		nodes = append(nodes, node)
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			walk(c.(map[string]any))
		}
	}
	walk(plans[0]["Plan"])
	return nodes
}

// recordStatements records the statements s sends from now on; the
// function it returns takes those recorded since the last call.
func recordStatements(s *store.Store) func() []string {
	var (
		mu   sync.Mutex
		sent []string
	)
	record := queryRecorder(func(q string) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, q)
	})
	s.DB.AddQueryHook(record)
	if reads := store.Reader(s); reads != s.DB {
		reads.AddQueryHook(record) // SQLite's read pool
	}
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
// the count is the one the rows give. PostgreSQL keeps no order keys: an
// index on iocs counts the range there (TestOrderPagesWalkTheIndexesOnPostgres).
func TestManyKeysCountThroughTheKeys(t *testing.T) {
	s := storetest.NewSQLite(t)
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

// A tag's page walking an order's keys on SQLite probes each key's IoC in
// the tag keys before it reads the IoC's row: the probe is a join between
// the order's keys and iocs. The page is the one the rows give, with an
// IoC that lost the tag since the keys (its tag key stale) and one that
// gained it (not yet keyed).
func TestTagWalkProbesTheTagKeysBeforeTheRows(t *testing.T) {
	s := storetest.NewSQLite(t)
	ctx := context.Background()
	feed, other := newFeed(t, s, "f"), newFeed(t, s, "other")
	var inds []ioc.Indicator
	for i := range 40 {
		var tags []string
		if i%4 == 0 {
			tags = append(tags, "rare")
		}
		inds = append(inds, dom(fmt.Sprintf("t%02d.example", i), "src", i, tags...))
	}
	apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 10 * day, Indicators: inds})
	// t39 takes the tag on from another feed, after the keys; t37 loses
	// it when that feed's sightings go.
	apply(t, s, store.Batch{FeedID: other, Now: t0, Retention: 10 * day, Indicators: []ioc.Indicator{dom("t37.example", "src", 37, "rare")}})
	catchUpAll(t, s.CatchUpKeys, 1000)
	apply(t, s, store.Batch{FeedID: other, Now: t0.Add(time.Minute), Retention: 10 * day, Indicators: []ioc.Indicator{dom("t39.example", "src", 39, "rare")}})
	if _, err := s.DeleteFeedSightings(ctx, other); err != nil {
		t.Fatal(err)
	}
	apply(t, s, store.Batch{FeedID: other, Now: t0.Add(2 * time.Minute), Retention: 10 * day, Indicators: []ioc.Indicator{dom("t39.example", "src", 39, "rare")}})
	savedSparse := *store.SparseKeys
	*store.SparseKeys, s.IoCCountCap = 1, 3
	defer func() { *store.SparseKeys, s.IoCCountCap = savedSparse, 0 }()
	recorded := recordStatements(s)
	page, err := s.IoCs(ctx, store.IoCFilter{Tag: "rare"}, store.IoCOrder{Field: store.IoCOrderScore, Desc: true}, 4, "")
	if err != nil {
		t.Fatal(err)
	}
	got := eachIoCs(page.IoCs, func(r store.IoC) string { return r.Value })
	if want := []string{"t39.example", "t36.example", "t32.example", "t28.example"}; !slices.Equal(got, want) {
		t.Errorf("the rare tag by score desc: %v, want %v", got, want)
	}
	probed := false
	for _, q := range recorded() {
		probed = probed || strings.Contains(q, `"ioc_score_keys" AS x CROSS JOIN ioc_tag_keys AS tk CROSS JOIN iocs AS iocs`)
	}
	if !probed {
		t.Error("no walk of the score keys probed the tag keys before the rows")
	}
}
