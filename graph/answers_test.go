package graph_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestAnswersAreBounded: an answer larger than MaxAnswerBytes is refused
// with the limit named, on the bulk-lookup writer's path and on gqlgen's
// generated one (which `allowlisted` takes), and one just within it is
// answered whole.
func TestAnswersAreBounded(t *testing.T) {
	const maxBytes = 64 << 10
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		r := &graph.Resolver{Store: st}
		srv := handler.New(graph.NewSchema(r))
		srv.AddTransport(transport.POST{})
		srv.SetErrorPresenter(graph.ErrorPresenter)
		limits := graph.DefaultLimits()
		limits.MaxAnswerBytes = maxBytes
		graph.UseLimitsOf(srv, limits)
		graph.UseFastLookups(srv, r)
		user := &store.User{ID: 1, Username: "analyst", Scope: store.ScopeRoot}
		h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			srv.ServeHTTP(w, req.WithContext(auth.WithUser(req.Context(), user)))
		})
		values := func(n int) []string {
			v := make([]string, n)
			for i := range v {
				v[i] = fmt.Sprintf("https://host-%d.example/a/long/enough/path", i)
			}
			return v
		}
		for name, selection := range map[string]string{
			"writer":    "input type value known",
			"generated": "input type value known allowlisted { list }",
		} {
			t.Run(name, func(t *testing.T) {
				query := "query($v: [String!]!) { a: lookupIocs(values: $v) { " + selection + " } b: lookupIocs(values: $v) { input } }"
				// About 185 bytes a value (205 with allowlisted): 300 values
				// are 55–61 KB.
				small := postRaw(t, h, query, map[string]any{"v": values(300)})
				if !strings.HasPrefix(small, `200 {"data":{"a":[`) || strings.Contains(small, "errors") {
					t.Errorf("an answer within the limit: %.300s", small)
				}
				big := postRaw(t, h, query, map[string]any{"v": values(2000)})
				if !strings.Contains(big, fmt.Sprintf("the answer is larger than %d bytes", maxBytes)) ||
					!strings.Contains(big, `"limit":"answerBytes"`) || strings.Contains(big, `"data":{`) || len(big) > 1000 {
					t.Errorf("an answer past the limit: %.300s (%d bytes)", big, len(big))
				}
			})
		}
	})
}
