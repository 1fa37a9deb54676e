package graph_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/client"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// asUser returns an in-process GraphQL client acting as user.
func asUser(t *testing.T, st *store.Store, user *store.User) *client.Client {
	t.Helper()
	srv := handler.New(graph.NewSchema(&graph.Resolver{Store: st}))
	srv.AddTransport(transport.POST{})
	srv.SetErrorPresenter(graph.ErrorPresenter)
	return client.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), user)))
	}))
}

type viewJSON struct {
	ID        string
	Table     string
	Name      string
	Columns   []string
	Filter    map[string]any
	Search    string
	OrderBy   *struct{ Field, Direction string }
	IsDefault bool
}

const saveViewMutation = `mutation($in: SaveViewInput!) {
  saveView(input: $in) { id table name columns filter search orderBy { field direction } isDefault }
}`

func TestSavedViewsAPI(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		alice, _ := st.CreateUser(ctx, "alice", "password1", store.ScopeRoot, nil)
		bob, _ := st.CreateUser(ctx, "bob", "password2", store.ScopeRoot, nil)
		ca, cb := asUser(t, st, alice), asUser(t, st, bob)

		var saved struct{ SaveView viewJSON }
		ca.MustPost(saveViewMutation, &saved, client.Var("in", map[string]any{
			"table": "FEEDS", "name": "Broken TSV", "columns": []string{"name", "statusMessage"},
			"filter":    map[string]any{"type": []string{"CUSTOM"}, "statusMessage": []string{"Invalid URL"}},
			"search":    " tsv ",
			"orderBy":   map[string]any{"field": "LAST_INGESTION", "direction": "DESC"},
			"isDefault": true,
		}))
		v := saved.SaveView
		if v.Table != "FEEDS" || v.Name != "Broken TSV" || !v.IsDefault || v.Search != "tsv" ||
			v.OrderBy == nil || v.OrderBy.Field != "LAST_INGESTION" || v.OrderBy.Direction != "DESC" ||
			strings.Join(v.Columns, ",") != "name,statusMessage" || v.Filter["type"] == nil {
			t.Fatalf("saved view = %+v", v)
		}

		var list struct{ Views []viewJSON }
		ca.MustPost(`{ views(table: FEEDS) { id name isDefault filter } }`, &list)
		if len(list.Views) != 1 || list.Views[0].ID != v.ID {
			t.Errorf("alice's views = %+v", list.Views)
		}
		cb.MustPost(`{ views(table: FEEDS) { id } }`, &list)
		if len(list.Views) != 0 {
			t.Errorf("bob sees alice's views: %+v", list.Views)
		}
		ca.MustPost(`{ views(table: IOCS) { id } }`, &list)
		if len(list.Views) != 0 {
			t.Errorf("feeds view listed under IOCS: %+v", list.Views)
		}

		for name, tc := range map[string]struct {
			in    map[string]any
			field string
		}{
			"unknown column":      {map[string]any{"table": "FEEDS", "name": "x", "columns": []string{"bogus"}}, "columns"},
			"no column":           {map[string]any{"table": "FEEDS", "name": "x", "columns": []string{}}, "columns"},
			"ioc column on feeds": {map[string]any{"table": "FEEDS", "name": "x", "columns": []string{"score"}}, "columns"},
			"bad enum in filter": {map[string]any{"table": "FEEDS", "name": "x", "columns": []string{"name"},
				"filter": map[string]any{"type": []string{"WEIRD"}}}, "filter"},
			"unknown filter field": {map[string]any{"table": "FEEDS", "name": "x", "columns": []string{"name"},
				"filter": map[string]any{"colour": []string{"red"}}}, "filter"},
			"ioc filter on feeds": {map[string]any{"table": "FEEDS", "name": "x", "columns": []string{"name"},
				"filter": map[string]any{"minScore": 50}}, "filter"},
			"bad order field": {map[string]any{"table": "IOCS", "name": "x", "columns": []string{"value"},
				"orderBy": map[string]any{"field": "NAME"}}, "orderBy"},
			"blank name": {map[string]any{"table": "IOCS", "name": " ", "columns": []string{"value"}}, "name"},
		} {
			t.Run(name, func(t *testing.T) {
				var resp map[string]any
				err := ca.Post(saveViewMutation, &resp, client.Var("in", tc.in))
				if err == nil || !strings.Contains(err.Error(), `"code":"BAD_USER_INPUT"`) ||
					!strings.Contains(err.Error(), `"field":"`+tc.field+`"`) {
					t.Errorf("error = %v, want BAD_USER_INPUT on %s", err, tc.field)
				}
			})
		}

		var ok map[string]any
		if err := cb.Post(`mutation($id: ID!) { deleteView(id: $id) }`, &ok, client.Var("id", v.ID)); err == nil ||
			!strings.Contains(err.Error(), "NOT_FOUND") {
			t.Errorf("bob deleting alice's view: %v", err)
		}
		var del struct{ DeleteView bool }
		ca.MustPost(`mutation($id: ID!) { deleteView(id: $id) }`, &del, client.Var("id", v.ID))
		ca.MustPost(`{ views(table: FEEDS) { id } }`, &list)
		if !del.DeleteView || len(list.Views) != 0 {
			t.Errorf("after delete: %v %+v", del, list.Views)
		}
	})
}
