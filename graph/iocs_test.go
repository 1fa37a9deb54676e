package graph_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func iocClient(t *testing.T, st *store.Store) *client.Client {
	t.Helper()
	u, err := st.CreateUser(context.Background(), "reader", "password1", store.ScopeRoot, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := handler.New(graph.NewSchema(&graph.Resolver{Store: st}))
	srv.AddTransport(transport.POST{})
	srv.SetErrorPresenter(graph.ErrorPresenter)
	return client.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), u)))
	}))
}

func iocTestFeed(t *testing.T, st *store.Store, name string) int64 {
	t.Helper()
	now := time.Now()
	f := &store.Feed{Name: name, Type: store.FeedCustom, Category: "TSV", Enabled: true, StatusMessage: "Success",
		PollingFrequency: 24, RetentionPeriod: 30, CreatedAt: now, UpdatedAt: now}
	if _, err := st.DB.NewInsert().Model(f).Returning("id").Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f.ID
}

var iocNow = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func ingestIoCs(t *testing.T, st *store.Store, feed int64, retention time.Duration, inds ...ioc.Indicator) {
	t.Helper()
	if _, err := st.ApplyBatch(context.Background(), store.Batch{FeedID: feed, Now: iocNow, Retention: retention, Indicators: inds}); err != nil {
		t.Fatal(err)
	}
}

type iocJSON struct {
	ID             string
	Type           string
	Value          string
	Score          int
	Tags           []string
	ExpirationDate string
	Sources        []struct {
		Source string
		Score  int
	}
}

type iocsResp struct {
	Iocs struct {
		TotalCount int
		Nodes      []iocJSON
		PageInfo   struct {
			EndCursor   *string
			HasNextPage bool
		}
	}
}

const iocsQuery = `query($f: IocFilter, $o: IocOrder, $first: Int, $after: String) {
  iocs(filter: $f, orderBy: $o, first: $first, after: $after) {
    totalCount nodes { id type value score tags expirationDate } pageInfo { endCursor hasNextPage }
  }
}`

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return tm
}

func values(nodes []iocJSON) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Value
	}
	return out
}

// fixture stores: feed a (10 days) and feed b (40 days).
func iocFixture(t *testing.T, st *store.Store) (a, b int64) {
	a, b = iocTestFeed(t, st, "TSV_a"), iocTestFeed(t, st, "TSV_b")
	tsvTag := []string{"emerging_threat"}
	ingestIoCs(t, st, a, 10*24*time.Hour,
		ioc.Indicator{Kind: ioc.Domain, Value: "example.com", Source: "s", Score: 90, Tags: tsvTag},
		ioc.Indicator{Kind: ioc.Domain, Value: "evil.example.org", Source: "s", Score: 40, Tags: tsvTag},
		ioc.Indicator{Kind: ioc.IP, Value: "192.0.2.1", Source: "s", Score: 70, Tags: tsvTag},
		ioc.Indicator{Kind: ioc.URL, Value: "http://example.com/Login_Page", Source: "s", Score: 10, Tags: tsvTag},
		ioc.Indicator{Kind: ioc.MD5, Value: "d41d8cd98f00b204e9800998ecf8427e", Source: "s", Score: 40},
	)
	ingestIoCs(t, st, b, 40*24*time.Hour,
		ioc.Indicator{Kind: ioc.Domain, Value: "example.com", Source: "x", Score: 20, Tags: []string{"apt"}},
		ioc.Indicator{Kind: ioc.IP, Value: "2001:db8::1", Source: "x", Score: 55},
	)
	return a, b
}

func TestIocsFilters(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		a, b := iocFixture(t, st)
		c := iocClient(t, st)
		day := 24 * time.Hour
		tests := map[string]struct {
			filter map[string]any
			want   []string // values, in any order
		}{
			"none":               {nil, []string{"example.com", "evil.example.org", "192.0.2.1", "http://example.com/Login_Page", "d41d8cd98f00b204e9800998ecf8427e", "2001:db8::1"}},
			"type":               {map[string]any{"type": []string{"IP"}}, []string{"192.0.2.1", "2001:db8::1"}},
			"types":              {map[string]any{"type": []string{"IP", "MD5"}}, []string{"192.0.2.1", "d41d8cd98f00b204e9800998ecf8427e", "2001:db8::1"}},
			"value normalised":   {map[string]any{"value": " Example.COM. "}, []string{"example.com"}},
			"value hash case":    {map[string]any{"value": "D41D8CD98F00B204E9800998ECF8427E"}, []string{"d41d8cd98f00b204e9800998ecf8427e"}},
			"value ipv6":         {map[string]any{"value": "2001:DB8:0::1"}, []string{"2001:db8::1"}},
			"value url":          {map[string]any{"value": "HTTP://EXAMPLE.com:80/Login_Page"}, []string{"http://example.com/Login_Page"}},
			"value wrong type":   {map[string]any{"value": "example.com", "type": []string{"IP"}}, []string{}},
			"value invalid":      {map[string]any{"value": "not a value at all"}, []string{}},
			"prefix":             {map[string]any{"valuePrefix": "ex"}, []string{"example.com"}},
			"prefix url":         {map[string]any{"valuePrefix": "http://example.com/"}, []string{"http://example.com/Login_Page"}},
			"search":             {map[string]any{"search": "EXAMPLE"}, []string{"example.com", "evil.example.org", "http://example.com/Login_Page"}},
			"search underscore":  {map[string]any{"search": "n_p"}, []string{"http://example.com/Login_Page"}},
			"search percent":     {map[string]any{"search": "%"}, []string{}},
			"feed b":             {map[string]any{"feedId": fmt.Sprint(b)}, []string{"example.com", "2001:db8::1"}},
			"feed a and type":    {map[string]any{"feedId": fmt.Sprint(a), "type": []string{"DOMAIN"}}, []string{"example.com", "evil.example.org"}},
			"tag":                {map[string]any{"tag": "apt"}, []string{"example.com"}},
			"tag tsv":            {map[string]any{"tag": "emerging_threat"}, []string{"example.com", "evil.example.org", "192.0.2.1", "http://example.com/Login_Page"}},
			"tag none":           {map[string]any{"tag": "emerging"}, []string{}},
			"min score":          {map[string]any{"minScore": 55}, []string{"example.com", "192.0.2.1", "2001:db8::1"}},
			"expires before":     {map[string]any{"expiresBefore": iocNow.Add(20 * day)}, []string{"evil.example.org", "192.0.2.1", "http://example.com/Login_Page", "d41d8cd98f00b204e9800998ecf8427e"}},
			"expires after":      {map[string]any{"expiresAfter": iocNow.Add(10 * day)}, []string{"example.com", "2001:db8::1"}},
			"expires after edge": {map[string]any{"expiresAfter": iocNow.Add(10*day - time.Second), "type": []string{"MD5"}}, []string{"d41d8cd98f00b204e9800998ecf8427e"}},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				var resp iocsResp
				c.MustPost(iocsQuery, &resp, client.Var("f", tc.filter), client.Var("first", 100))
				got := values(resp.Iocs.Nodes)
				slices.Sort(got)
				slices.Sort(tc.want)
				if !slices.Equal(got, tc.want) || resp.Iocs.TotalCount != len(tc.want) {
					t.Errorf("values = %q (total %d), want %q", got, resp.Iocs.TotalCount, tc.want)
				}
			})
		}

		// Aggregates and sources of the IoC two feeds share.
		var one struct{ Ioc iocJSON }
		var list iocsResp
		c.MustPost(iocsQuery, &list, client.Var("f", map[string]any{"value": "example.com", "type": []string{"DOMAIN"}}))
		c.MustPost(`query($id: ID!) { ioc(id: $id) { id type value score tags expirationDate sources { source score } } }`,
			&one, client.Var("id", list.Iocs.Nodes[0].ID))
		got := one.Ioc
		if got.Type != "DOMAIN" || got.Score != 90 || strings.Join(got.Tags, ",") != "apt,emerging_threat" ||
			!mustTime(t, got.ExpirationDate).Equal(iocNow.Add(40*day)) || len(got.Sources) != 2 || got.Sources[0].Score != 90 || got.Sources[1].Source != "x" {
			t.Errorf("ioc = %+v", got)
		}

		errs := map[string]struct {
			query string
			vars  []client.Option
			code  string
		}{
			"unknown id":      {`{ ioc(id: "999999") { id } }`, nil, "NOT_FOUND"},
			"bad id":          {`{ ioc(id: "x") { id } }`, nil, "BAD_USER_INPUT"},
			"bad feed id":     {iocsQuery, []client.Option{client.Var("f", map[string]any{"feedId": "x"})}, "BAD_USER_INPUT"},
			"first too large": {iocsQuery, []client.Option{client.Var("first", 1001)}, "BAD_USER_INPUT"},
			"first negative":  {iocsQuery, []client.Option{client.Var("first", -1)}, "BAD_USER_INPUT"},
			"bad cursor":      {iocsQuery, []client.Option{client.Var("after", "bm9wZQ")}, "BAD_USER_INPUT"},
		}
		for name, tc := range errs {
			t.Run(name, func(t *testing.T) {
				var resp map[string]any
				err := c.Post(tc.query, &resp, tc.vars...)
				if err == nil || !strings.Contains(err.Error(), tc.code) {
					t.Errorf("err = %v, want %s", err, tc.code)
				}
			})
		}
	})
}

// walk reads every page of a query and returns the values in order.
func walk(t *testing.T, c *client.Client, order map[string]any, pageSize int, between func(page int, cursor string)) []string {
	t.Helper()
	var all []string
	var after *string
	for page := 1; page < 100; page++ {
		var resp iocsResp
		c.MustPost(iocsQuery, &resp, client.Var("o", order), client.Var("first", pageSize), client.Var("after", after))
		all = append(all, values(resp.Iocs.Nodes)...)
		if len(resp.Iocs.Nodes) > pageSize {
			t.Fatalf("page %d has %d nodes", page, len(resp.Iocs.Nodes))
		}
		if !resp.Iocs.PageInfo.HasNextPage {
			return all
		}
		if len(resp.Iocs.Nodes) != pageSize || resp.Iocs.PageInfo.EndCursor == nil {
			t.Fatalf("page %d: %d nodes, cursor %v, but hasNextPage", page, len(resp.Iocs.Nodes), resp.Iocs.PageInfo.EndCursor)
		}
		after = resp.Iocs.PageInfo.EndCursor
		if between != nil {
			between(page, *after)
		}
	}
	t.Fatal("no last page")
	return nil
}

func TestIocsOrderAndPaging(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		feed := iocTestFeed(t, st, "TSV_a")
		var inds []ioc.Indicator
		for i := range 12 {
			// Scores repeat, so ties are broken by id.
			inds = append(inds, ioc.Indicator{Kind: ioc.Domain, Value: fmt.Sprintf("h%02d.example", 11-i), Source: "s", Score: i % 3})
		}
		ingestIoCs(t, st, feed, 24*time.Hour, inds...)
		c := iocClient(t, st)

		// One batch inserts in value order, so ids follow values.
		byValue := []string{}
		for i := range 12 {
			byValue = append(byValue, fmt.Sprintf("h%02d.example", i))
		}
		byID := byValue
		reversed := slices.Clone(byValue)
		slices.Reverse(reversed)
		score := func(v string) int { // h(11-i) has score i%3
			var n int
			fmt.Sscanf(v, "h%02d.example", &n)
			return (11 - n) % 3
		}
		byScore := slices.Clone(byValue)
		slices.SortStableFunc(byScore, func(x, y string) int { return score(x) - score(y) })
		byScoreDesc := slices.Clone(byScore)
		slices.Reverse(byScoreDesc)
		tests := map[string]struct {
			order map[string]any
			want  []string
		}{
			"default id":  {nil, byID},
			"value asc":   {map[string]any{"field": "VALUE"}, byValue},
			"value desc":  {map[string]any{"field": "VALUE", "direction": "DESC"}, reversed},
			"score asc":   {map[string]any{"field": "SCORE", "direction": "ASC"}, byScore},
			"score desc":  {map[string]any{"field": "SCORE", "direction": "DESC"}, byScoreDesc},
			"expiry":      {map[string]any{"field": "EXPIRATION_DATE"}, byID},
			"last seen":   {map[string]any{"field": "LAST_SEEN", "direction": "DESC"}, reversed},
			"type, by id": {map[string]any{"field": "TYPE"}, byID},
		}
		for name, tc := range tests {
			for _, size := range []int{1, 5, 6, 12, 50} {
				t.Run(fmt.Sprintf("%s/%d", name, size), func(t *testing.T) {
					if got := walk(t, c, tc.order, size, nil); !slices.Equal(got, tc.want) {
						t.Errorf("got %q\nwant %q", got, tc.want)
					}
				})
			}
		}

		// A cursor of one order is refused by another.
		var resp iocsResp
		c.MustPost(iocsQuery, &resp, client.Var("o", map[string]any{"field": "VALUE"}), client.Var("first", 2))
		var out map[string]any
		err := c.Post(iocsQuery, &out, client.Var("o", map[string]any{"field": "SCORE"}), client.Var("after", *resp.Iocs.PageInfo.EndCursor))
		if err == nil || !strings.Contains(err.Error(), "BAD_USER_INPUT") {
			t.Errorf("cursor of another order: err = %v", err)
		}
		// first: 0 counts without listing.
		c.MustPost(iocsQuery, &resp, client.Var("first", 0))
		if resp.Iocs.TotalCount != 12 || len(resp.Iocs.Nodes) != 0 || resp.Iocs.PageInfo.HasNextPage {
			t.Errorf("first 0 = %+v", resp.Iocs)
		}
	})
}

// TestIocsOrderByFirstSeen orders by when an IoC was first seen, ties by
// id, both ways and at every page size: a sighting reported later by
// another feed with an earlier time moves its IoC earlier, and a
// re-sighting at a later time does not move it.
func TestIocsOrderByFirstSeen(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		feedA, feedB := iocTestFeed(t, st, "TSV_a"), iocTestFeed(t, st, "TSV_b")
		at := func(feed int64, hours int, values ...string) {
			t.Helper()
			var inds []ioc.Indicator
			for _, v := range values {
				inds = append(inds, ioc.Indicator{Kind: ioc.Domain, Value: v, Source: "s", Score: 1})
			}
			b := store.Batch{FeedID: feed, Now: iocNow.Add(time.Duration(hours) * time.Hour), Retention: 30 * 24 * time.Hour, Indicators: inds}
			if _, err := st.ApplyBatch(context.Background(), b); err != nil {
				t.Fatal(err)
			}
		}
		// Inserted in value order within a batch, so ids follow values;
		// values are chosen so that no other order gives the same list.
		at(feedA, 0, "m1.example", "z1.example")
		at(feedA, 2, "a2.example", "b2.example", "y2.example", "m1.example")
		at(feedB, 1, "c3.example", "y2.example")
		want := []string{"m1.example", "z1.example", "y2.example", "c3.example", "a2.example", "b2.example"}
		desc := slices.Clone(want)
		slices.Reverse(desc)
		c := iocClient(t, st)
		for _, size := range []int{1, 2, 4, 6, 50} {
			for dir, w := range map[string][]string{"ASC": want, "DESC": desc} {
				t.Run(fmt.Sprintf("%s/%d", dir, size), func(t *testing.T) {
					got := walk(t, c, map[string]any{"field": "FIRST_SEEN", "direction": dir}, size, nil)
					if !slices.Equal(got, w) {
						t.Errorf("got %q\nwant %q", got, w)
					}
				})
			}
		}
		// A cursor of last seen is no cursor of first seen, though both
		// hold a time.
		var resp iocsResp
		c.MustPost(iocsQuery, &resp, client.Var("o", map[string]any{"field": "LAST_SEEN"}), client.Var("first", 2))
		var out map[string]any
		err := c.Post(iocsQuery, &out, client.Var("o", map[string]any{"field": "FIRST_SEEN"}), client.Var("after", *resp.Iocs.PageInfo.EndCursor))
		if err == nil || !strings.Contains(err.Error(), "BAD_USER_INPUT") {
			t.Errorf("cursor of last seen: err = %v", err)
		}
	})
}

// TestIocsPagingWhileIngesting adds rows between pages: rows already listed
// or sorting before the cursor never show again, none of the original rows
// is skipped, and rows sorting after the cursor do show.
func TestIocsPagingWhileIngesting(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		feed := iocTestFeed(t, st, "TSV_a")
		var inds []ioc.Indicator
		for i := range 20 {
			inds = append(inds, ioc.Indicator{Kind: ioc.Domain, Value: fmt.Sprintf("m%02d.example", i), Source: "s", Score: 1})
		}
		ingestIoCs(t, st, feed, 24*time.Hour, inds...)
		c := iocClient(t, st)
		got := walk(t, c, map[string]any{"field": "VALUE"}, 7, func(page int, _ string) {
			// "a..." sorts before every cursor, "z..." after; a re-report of
			// an already listed value changes nothing of the order.
			ingestIoCs(t, st, feed, 24*time.Hour,
				ioc.Indicator{Kind: ioc.Domain, Value: fmt.Sprintf("a%d.example", page), Source: "s", Score: 1},
				ioc.Indicator{Kind: ioc.Domain, Value: fmt.Sprintf("z%d.example", page), Source: "s", Score: 1},
				ioc.Indicator{Kind: ioc.Domain, Value: "m00.example", Source: "other", Score: 99},
			)
		})
		var want []string
		for i := range 20 {
			want = append(want, fmt.Sprintf("m%02d.example", i))
		}
		// Pages of 7: z1 and z2 come after the cursors of pages 1 and 2,
		// page 3 ends on z1 and z3 comes after it.
		want = append(want, "z1.example", "z2.example", "z3.example")
		if !slices.Equal(got, want) {
			t.Errorf("got %q\nwant %q", got, want)
		}
	})
}
