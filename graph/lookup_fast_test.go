package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// lookupHandler serves the schema as the server does, with or without the
// bulk-lookup writer, as user (nil: no caller). wrote counts the answers the
// writer itself wrote.
func lookupHandler(st *store.Store, user *store.User, fast bool, wrote *int) http.Handler {
	r := &graph.Resolver{Store: st}
	srv := handler.New(graph.NewSchema(r))
	srv.AddTransport(transport.POST{})
	srv.SetErrorPresenter(graph.ErrorPresenter)
	graph.UseLimits(srv)
	if fast {
		// Registered first, so it is outside the writer and sees its answer.
		srv.AroundRootFields(func(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
			m := next(ctx)
			if _, ok := m.(*graph.FastLookupAnswer); ok {
				*wrote++
			}
			return m
		})
		graph.UseFastLookups(srv, r)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if user != nil {
			req = req.WithContext(auth.WithUser(req.Context(), user))
		}
		srv.ServeHTTP(w, req)
	})
}

func postRaw(t *testing.T, h http.Handler, query string, vars map[string]any) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req := httptest.NewRequest("POST", "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	out, _ := io.ReadAll(rec.Result().Body)
	return fmt.Sprintf("%d %s", rec.Code, out)
}

// TestFastLookupsAnswerAsGqlgen checks that the bulk-lookup writer answers
// byte for byte what gqlgen's generated path answers, for every selection
// shape, and that it is the one answering the plain selections.
func TestFastLookupsAnswerAsGqlgen(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		u, err := st.CreateUser(ctx, "analyst", "password1", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 11, 24, 10, 0, 0, 123456000, time.UTC)
		for _, row := range []store.IoC{
			{Type: ioc.IP, Value: "203.0.113.7", Score: 90, Tags: []string{"emerging_threat", `quote"<&>`}},
			{Type: ioc.CertSHA1, Value: "da39a3ee5e6b4b0d3255bfef95601890afd80709", Score: 0, Tags: []string{}},
			{Type: ioc.URL, Value: "http://evil.example/\u2028x", Score: 60, Tags: []string{}},
		} {
			row.FirstSeen, row.LastSeen, row.ExpiresAt = now, now.Add(time.Hour), now.Add(24*time.Hour)
			if _, err := st.DB.NewInsert().Model(&row).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		values := []string{" 203.0.113.7 ", "198.51.100.1", "not a value!", "hxxp://evil.example/\u2028x", "203.0.113.7", ""}
		for name, tc := range map[string]struct {
			query string
			vars  map[string]any
			fast  bool // answered by the writer
		}{
			"every plain field": {`query($v: [String!]!) { lookupIocs(values: $v) { __typename input type value known error
				ioc { __typename id type value score tags firstSeen lastSeen expirationDate } } }`, map[string]any{"v": values}, true},
			"aliases, fragments and directives": {`query($v: [String!]!, $no: Boolean!) { found: lookupIocs(values: $v) { ...L k: known
				known @skip(if: $no) input @include(if: $no) ioc { s: score ... on Ioc { tags score } } i2: ioc { id } } }
				fragment L on IocLookup { value type }`, map[string]any{"v": values, "no": true}, true},
			"literal list":                {`{ lookupIocs(values: ["203.0.113.7", "x"]) { input known ioc { value } } }`, nil, true},
			"one value coerced to a list": {`{ lookupIocs(values: "203.0.113.7") { input known } }`, nil, true},
			"beside another root field":   {`query($v: [String!]!) { __typename lookupIocs(values: $v) { input } }`, map[string]any{"v": values}, true},
			"empty list":                  {`{ lookupIocs(values: []) { input } }`, nil, true},
			"sources (own resolver)":      {`query($v: [String!]!) { lookupIocs(values: $v) { input ioc { value sources { source } } } }`, map[string]any{"v": values}, false},
			"text (own resolver)":         {`query($v: [String!]!) { lookupIocs(values: $v) { ioc { text } } }`, map[string]any{"v": values}, false},
			"too many values":             {`query($v: [String!]!) { lookupIocs(values: $v) { input } }`, map[string]any{"v": make([]string, graph.MaxLookupValues+1)}, false},
		} {
			t.Run(name, func(t *testing.T) {
				wrote := 0
				want := postRaw(t, lookupHandler(st, u, false, nil), tc.query, tc.vars)
				got := postRaw(t, lookupHandler(st, u, true, &wrote), tc.query, tc.vars)
				if got != want {
					t.Errorf("writer answered\n%s\ngqlgen answered\n%s", got, want)
				}
				if (wrote == 1) != tc.fast {
					t.Errorf("writer answered %d times, want it to answer: %v", wrote, tc.fast)
				}
			})
		}
		t.Run("no caller", func(t *testing.T) {
			q := `{ lookupIocs(values: ["203.0.113.7"]) { input } }`
			wrote := 0
			want := postRaw(t, lookupHandler(st, nil, false, nil), q, nil)
			got := postRaw(t, lookupHandler(st, nil, true, &wrote), q, nil)
			if got != want || wrote != 0 {
				t.Errorf("writer answered %d times\n%s\ngqlgen answered\n%s", wrote, got, want)
			}
		})
	})
}
