package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

// TestAnswerPOSTAnswersAsGqlgen checks that the POST transport answers
// byte for byte, status and Content-Type included, what gqlgen's answers:
// data that json.Marshal escapes, errors, refused operations, bodies that
// do not decode and other media types.
func TestAnswerPOSTAnswersAsGqlgen(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		u, err := st.CreateUser(ctx, "analyst", "password1", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		for _, row := range []store.IoC{
			{Type: ioc.IP, Value: "203.0.113.7", Score: 90, Tags: []string{`quote"<&>\`, "line\u2028sep\u2029"}},
			{Type: ioc.URL, Value: "http://evil.example/a?b=1&c=<2>", Score: 60, Tags: []string{}},
		} {
			row.FirstSeen, row.LastSeen, row.ExpiresAt = now, now, now.Add(24*time.Hour)
			if _, err := st.DB.NewInsert().Model(&row).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		serve := func(tr graphql.Transport, user *store.User) http.Handler {
			r := &graph.Resolver{Store: st}
			srv := handler.New(graph.NewSchema(r))
			srv.AddTransport(tr)
			srv.SetErrorPresenter(graph.ErrorPresenter)
			graph.UseLimits(srv)
			graph.UseFastLookups(srv, r)
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if user != nil {
					req = req.WithContext(auth.WithUser(req.Context(), user))
				}
				srv.ServeHTTP(w, req)
			})
		}
		lookup := `{"query":"{ lookupIocs(values: [\"203.0.113.7\", \"http://evil.example/a?b=1&c=<2>\", \"x\"]) { input known ioc { value tags } } }"}`
		for name, tc := range map[string]struct {
			body, accept string
			anonymous    bool
		}{
			"data escaped as json.Marshal does": {body: lookup},
			"accept any":                        {body: lookup, accept: "*/*"},
			"accept graphql-response+json":      {body: lookup, accept: "application/graphql-response+json"},
			"iocs page":                         {body: `{"query":"{ iocs(first: 5) { totalCount edges { node { value tags } } } }"}`},
			"field error":                       {body: lookup, anonymous: true},
			"syntax error":                      {body: `{"query":"{ lookupIocs("}`},
			"validation error":                  {body: `{"query":"{ noSuchField }"}`},
			"variables missing":                 {body: `{"query":"query($v: [String!]!) { lookupIocs(values: $v) { input } }"}`},
			"body not JSON":                     {body: `{"query":`},
			"empty body":                        {body: ``},
		} {
			t.Run(name, func(t *testing.T) {
				user := u
				if tc.anonymous {
					user = nil
				}
				answer := func(tr graphql.Transport) string {
					req := httptest.NewRequest("POST", "/graphql", strings.NewReader(tc.body))
					req.Header.Set("Content-Type", "application/json")
					if tc.accept != "" {
						req.Header.Set("Accept", tc.accept)
					}
					rec := httptest.NewRecorder()
					serve(tr, user).ServeHTTP(rec, req)
					out, _ := io.ReadAll(rec.Result().Body)
					return rec.Result().Status + " " + rec.Header().Get("Content-Type") + "\n" + string(out)
				}
				want, got := answer(transport.POST{}), answer(answerPOST{})
				if got != want {
					t.Errorf("answerPOST answered\n%s\ngqlgen answered\n%s", got, want)
				}
				if !strings.Contains(got, "{") {
					t.Errorf("no answer: %s", got)
				}
			})
		}
	})
}
