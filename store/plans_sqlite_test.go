package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// SQLite plans without statistics, which the service never gathers: a
// prefix with no type reads the range of each kind in the (type, value)
// index (skipping through the kinds needs statistics to know they are
// few: without, the prefix read the whole index), and the sweeper deletes
// an expired IoC by its id, not through its feed's range of iocs_feed_idx.
func TestSQLitePlansNeedNoStatistics(t *testing.T) {
	s := storetest.NewSQLite(t)
	ctx := context.Background()
	var inds []ioc.Indicator
	for i := range 2000 {
		inds = append(inds, dom(fmt.Sprintf("host-%d.example", i), "src", 50),
			ioc.Indicator{Kind: ioc.URL, Value: fmt.Sprintf("http://u%d.example/", i), Source: "src", Score: 50})
	}
	apply(t, s, store.Batch{FeedID: newFeed(t, s, "f"), Now: t0, Retention: day, Indicators: inds})
	if n := countRows(t, s, "sqlite_master WHERE name = 'sqlite_stat1'"); n != 0 {
		t.Fatal("the store has statistics: the test needs a store without")
	}
	sent := recordStatements(s)
	// plans explains the statements sent that contain marker and returns
	// the lines of their plans.
	plans := func(marker string) []string {
		t.Helper()
		var lines []string
		for _, q := range sent() {
			if !strings.Contains(q, marker) || strings.HasPrefix(q, "EXPLAIN") {
				continue
			}
			rows, err := s.DB.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, detail)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if len(lines) == 0 {
			t.Fatalf("no statement with %q was sent", marker)
		}
		return lines
	}

	page, err := s.IoCs(ctx, store.IoCFilter{ValuePrefix: "host-1"}, store.IoCOrder{}, 10, "")
	if err != nil || page.Total != 1111 || len(page.IoCs) != 10 {
		t.Fatalf("prefix host-1: total %d, %d IoCs, %v; want 1111 and a page of 10", page.Total, len(page.IoCs), err)
	}
	lines := plans("iocs.value >=")
	if slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "SCAN iocs") }) ||
		!slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "(type=? AND value>? AND value<?)") }) {
		t.Errorf("a prefix is planned as %q, want a search of each kind's range", lines)
	}

	if _, n, err := s.SweepExpired(ctx, t0.Add(2*day), 0); err != nil || n != 4000 {
		t.Fatalf("the sweeper expired %d IoCs, %v; want 4000", n, err)
	}
	lines = plans("DELETE FROM iocs WHERE id IN")
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "SEARCH iocs USING INTEGER PRIMARY KEY") }) {
		t.Errorf("the sweeper's delete is planned as %q, want a search by id", lines)
	}
}
