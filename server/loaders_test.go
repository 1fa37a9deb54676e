package server_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// queryCounter counts the SQL statements a store runs.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *queryCounter) AfterQuery(context.Context, *bun.QueryEvent) {}

// TestNestedSelectionsAreBatched: a page of IoCs with their sightings and
// the sightings' feeds costs a handful of queries, not one per row.
func TestNestedSelectionsAreBatched(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		seedExport(t, st, 300)
		counter := &queryCounter{}
		st.DB.AddQueryHook(counter)
		r := f.graphql("admin", adminKey, `{ iocs(first: 200) { nodes { value sources { source score feed { name } } } } }`)
		if r.status != 200 || strings.Count(string(r.body), `"name":"TSV_acme"`) != 200 {
			t.Fatalf("query: %d %.300s", r.status, r.body)
		}
		// Authentication (user, keys, last use), the page and its count, and
		// a batch of sightings and of feeds: 7. A loaded machine may split a
		// batch when goroutines miss the loader's window, so allow a margin;
		// one query per row would be over 400.
		if n := counter.n.Load(); n > 20 {
			t.Errorf("200 IoCs with sources and feeds took %d queries, want at most 20", n)
		}
	})
}
