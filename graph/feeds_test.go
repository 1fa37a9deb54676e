package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// feedsAPI is an in-process GraphQL client on a resolver with a running
// ingestion runner.
type feedsAPI struct {
	t      *testing.T
	runner *ingest.Runner
	feeds  *feeds.Service
	root   *client.Client
	tenant *client.Client
}

func newFeedsAPI(t *testing.T, st *store.Store) *feedsAPI {
	t.Helper()
	ctx := context.Background()
	secrets, err := store.NewSecrets([]byte(strings.Repeat("s", 32)))
	if err != nil {
		t.Fatal(err)
	}
	// The tests' feeds are on loopback, which the egress policy refuses by
	// default.
	reg := ingest.NewRegistryWithClient(egress.NewClient(egress.Options{AllowPrivate: true}))
	reg.Register(tsv.Kind(tsv.Options{TempDir: t.TempDir()}))
	runner, err := ingest.New(ingest.Options{Store: st, Secrets: secrets, Sources: reg,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Stop(context.Background()) })
	service, err := feeds.New(feeds.Options{Store: st, Secrets: secrets, Bus: runner.Bus(), Sources: reg, Runner: runner, Allowlist: runner.Allowlist()})
	if err != nil {
		t.Fatal(err)
	}
	res := &graph.Resolver{Store: st, Events: runner.Bus(), Ingest: runner, Feeds: service}
	srv := handler.New(graph.NewSchema(res))
	srv.AddTransport(transport.POST{})
	srv.SetErrorPresenter(graph.ErrorPresenter)
	as := func(u *store.User) *client.Client {
		return client.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			srv.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), u)))
		}))
	}
	root, err := st.CreateUser(ctx, "root", "password1", store.ScopeRoot, nil)
	if err != nil {
		t.Fatal(err)
	}
	tenantUser := &store.User{ID: root.ID + 1000, Username: "t", Scope: store.ScopeTenant}
	return &feedsAPI{t: t, runner: runner, feeds: service, root: as(root), tenant: as(tenantUser)}
}

type apiError struct {
	Message    string
	Extensions struct{ Code, Field string }
}

// do posts q as c and decodes data into resp; it returns the errors.
func (a *feedsAPI) do(c *client.Client, q string, resp any, vars map[string]any) []apiError {
	a.t.Helper()
	var opts []client.Option
	for k, v := range vars {
		opts = append(opts, client.Var(k, v))
	}
	raw, err := c.RawPost(q, opts...)
	if err != nil {
		a.t.Fatalf("post: %v", err)
	}
	if resp != nil && raw.Data != nil {
		b, _ := json.Marshal(raw.Data)
		if err := json.Unmarshal(b, resp); err != nil {
			a.t.Fatalf("data: %v", err)
		}
	}
	var errs []apiError
	if raw.Errors != nil {
		json.Unmarshal(raw.Errors, &errs)
	}
	return errs
}

// must runs q as root and fails the test on any error.
func (a *feedsAPI) must(q string, resp any, vars map[string]any) {
	a.t.Helper()
	if errs := a.do(a.root, q, resp, vars); len(errs) > 0 {
		a.t.Fatalf("%s: %+v", q, errs)
	}
}

func expectError(t *testing.T, errs []apiError, code, field string) {
	t.Helper()
	if len(errs) != 1 || errs[0].Extensions.Code != code || (field != "" && errs[0].Extensions.Field != field) {
		t.Errorf("errors = %+v, want one %s on %q", errs, code, field)
	}
}

type feedJSON struct {
	ID, Name, Type, Category, Status, StatusMessage string
	Enabled                                         bool
	PollingFrequency, RetentionPeriod, BackfillDays int
	Description, CollectionURL, Username, Cursor    string
	HasPassword                                     bool
	IocCount                                        int
	CanEdit, CanDelete, CanReset                    bool
	LastIngestion                                   *string
	LastRun                                         *struct {
		ID                        string
		Fetched, Stored, Rejected int
		ErrorKind, Note           string
		Rejections                []struct {
			Position int
			Reason   string
		}
	}
}

const feedFields = `id name type category status statusMessage enabled pollingFrequency retentionPeriod backfillDays
description collectionUrl username cursor hasPassword iocCount canEdit canDelete canReset lastIngestion
lastRun { id fetched stored rejected errorKind note rejections { position reason } }`

const createFeed = `mutation($in: CustomFeedInput!) { createCustomFeed(input: $in) { ` + feedFields + ` } }`

func TestFeedsAPI(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a := newFeedsAPI(t, st)
		tsv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "bob" || p != "pw-secret" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			fmt.Fprint(w, "ip\t192.0.2.1\tsrc\t90\nip\t192.0.2.2\tsrc\t80\nnope\n")
		}))
		defer tsv.Close()

		var created struct{ CreateCustomFeed feedJSON }
		a.must(createFeed, &created, map[string]any{"in": map[string]any{
			"category": "TSV", "name": "acme", "collectionUrl": tsv.URL, "username": "bob", "password": "pw-secret",
			"pollingFrequency": 6, "retentionPeriod": 30, "description": "Acme threats"}})
		f := created.CreateCustomFeed
		if f.Name != "TSV_acme" || f.Type != "CUSTOM" || f.Category != "TSV" || !f.HasPassword || !f.Enabled ||
			!f.CanEdit || !f.CanDelete || f.CanReset || f.PollingFrequency != 6 || f.Username != "bob" {
			t.Errorf("created = %+v", f)
		}
		a.runner.Wait()

		var got struct{ Feed feedJSON }
		a.must(`query($id: ID!) { feed(id: $id) { `+feedFields+` } }`, &got, map[string]any{"id": f.ID})
		if got.Feed.Status != "SUCCESS" || got.Feed.StatusMessage != "Success" || got.Feed.IocCount != 2 ||
			got.Feed.LastIngestion == nil || got.Feed.LastRun == nil || got.Feed.LastRun.Stored != 2 ||
			got.Feed.LastRun.Rejected != 1 || got.Feed.LastRun.Rejections[0].Position != 3 {
			t.Errorf("feed after its first run = %+v", got.Feed)
		}
		raw, _ := a.root.RawPost(`query($id: ID!) { feed(id: $id) { `+feedFields+` } }`, client.Var("id", f.ID))
		if b, _ := json.Marshal(raw.Data); strings.Contains(string(b), "pw-secret") {
			t.Error("the password is readable through the API")
		}

		// Validation errors name their field.
		badInputs := map[string]struct {
			in    map[string]any
			field string
		}{
			"backfill on TSV":  {map[string]any{"backfillDays": 3}, "backfillDays"},
			"polling 0":        {map[string]any{"pollingFrequency": 0}, "pollingFrequency"},
			"retention 400":    {map[string]any{"retentionPeriod": 400}, "retentionPeriod"},
			"url not http":     {map[string]any{"collectionUrl": "file:///etc/passwd"}, "collectionUrl"},
			"url with user":    {map[string]any{"collectionUrl": strings.Replace(tsv.URL, "//", "//bob:pw-secret@", 1)}, "collectionUrl"},
			"empty name":       {map[string]any{"name": " "}, "name"},
			"taxii not loaded": {map[string]any{"category": "TAXII"}, "category"},
		}
		// Every invalid field is reported at once, each with its field.
		errs := a.do(a.root, createFeed, nil, map[string]any{"in": map[string]any{"category": "TSV", "name": " ",
			"collectionUrl": "file:///etc/passwd", "pollingFrequency": 0, "retentionPeriod": 400}})
		var fields []string
		for _, e := range errs {
			if e.Extensions.Code != "BAD_USER_INPUT" {
				t.Errorf("error %+v is not BAD_USER_INPUT", e)
			}
			fields = append(fields, e.Extensions.Field)
		}
		slices.Sort(fields)
		if want := []string{"collectionUrl", "name", "pollingFrequency", "retentionPeriod"}; !slices.Equal(fields, want) {
			t.Errorf("fields in error = %v, want %v (%+v)", fields, want, errs)
		}
		for name, tc := range badInputs {
			t.Run(name, func(t *testing.T) {
				in := map[string]any{"category": "TSV", "name": "bad", "collectionUrl": tsv.URL,
					"pollingFrequency": 6, "retentionPeriod": 30}
				for k, v := range tc.in {
					in[k] = v
				}
				expectError(t, a.do(a.root, createFeed, nil, map[string]any{"in": in}), "BAD_USER_INPUT", tc.field)
			})
		}
		expectError(t, a.do(a.tenant, createFeed, nil, map[string]any{"in": map[string]any{"category": "TSV", "name": "x",
			"collectionUrl": tsv.URL, "pollingFrequency": 6, "retentionPeriod": 30}}), "FORBIDDEN", "")
		expectError(t, a.do(a.tenant, `{ feeds { totalCount } }`, nil, nil), "FORBIDDEN", "")

		// A URL with user information is refused on update too, without
		// echoing it.
		errs = a.do(a.root, `mutation($id: ID!, $in: FeedUpdateInput!) { updateFeed(id: $id, input: $in) { id } }`, nil,
			map[string]any{"id": f.ID, "in": map[string]any{"collectionUrl": strings.Replace(tsv.URL, "//", "//bob:pw-secret@", 1)}})
		expectError(t, errs, "BAD_USER_INPUT", "collectionUrl")
		if len(errs) > 0 && strings.Contains(errs[0].Message, "pw-secret") {
			t.Errorf("the error shows the password: %q", errs[0].Message)
		}

		// Update: only the given fields change; the password can be cleared.
		var upd struct{ UpdateFeed feedJSON }
		a.must(`mutation($id: ID!, $in: FeedUpdateInput!) { updateFeed(id: $id, input: $in) { `+feedFields+` } }`, &upd,
			map[string]any{"id": f.ID, "in": map[string]any{"pollingFrequency": 12, "password": ""}})
		// Changed credentials start a run: it ends before the feed is
		// disabled below, or it would not run at all.
		a.runner.Wait()
		if u := upd.UpdateFeed; u.PollingFrequency != 12 || u.HasPassword || u.RetentionPeriod != 30 ||
			u.Description != "Acme threats" || u.Name != "TSV_acme" {
			t.Errorf("updated = %+v", u)
		}

		// Built-in feeds: listed, but not editable, deletable or resettable.
		builtin := &store.Feed{Name: "Open Threat Exchange", Type: store.FeedBuiltin, Kind: "otx", Category: "builtin",
			Enabled: true, RetentionPeriod: 30, StatusMessage: store.MessageRunning}
		if err := st.CreateFeed(ctx, builtin); err != nil {
			t.Fatal(err)
		}
		bid := fmt.Sprint(builtin.ID)
		expectError(t, a.do(a.root, `mutation($id: ID!) { updateFeed(id: $id, input: {retentionPeriod: 5}) { id } }`, nil,
			map[string]any{"id": bid}), "BAD_USER_INPUT", "id")
		expectError(t, a.do(a.root, `mutation($id: ID!) { deleteFeed(id: $id) }`, nil, map[string]any{"id": bid}), "BAD_USER_INPUT", "id")
		expectError(t, a.do(a.root, `mutation { feed: deleteFeed(id: "99999") }`, nil, nil), "NOT_FOUND", "")

		// The table: search, filter, order, pages.
		var list struct {
			Feeds struct {
				TotalCount int
				Nodes      []feedJSON
				PageInfo   struct {
					EndCursor   *string
					HasNextPage bool
				}
			}
		}
		listQ := `query($s: String, $f: FeedFilter, $o: FeedOrder, $first: Int, $after: String) {
			feeds(search: $s, filter: $f, orderBy: $o, first: $first, after: $after) {
				totalCount nodes { id name status canEdit } pageInfo { endCursor hasNextPage } } }`
		a.must(listQ, &list, map[string]any{"o": map[string]any{"field": "NAME", "direction": "DESC"}, "first": 1})
		if list.Feeds.TotalCount != 2 || len(list.Feeds.Nodes) != 1 || list.Feeds.Nodes[0].Name != "TSV_acme" ||
			!list.Feeds.PageInfo.HasNextPage || list.Feeds.PageInfo.EndCursor == nil {
			t.Fatalf("first page = %+v", list.Feeds)
		}
		a.must(listQ, &list, map[string]any{"o": map[string]any{"field": "NAME", "direction": "DESC"}, "first": 1,
			"after": *list.Feeds.PageInfo.EndCursor})
		if len(list.Feeds.Nodes) != 1 || list.Feeds.Nodes[0].Name != "Open Threat Exchange" || list.Feeds.PageInfo.HasNextPage ||
			list.Feeds.Nodes[0].CanEdit {
			t.Errorf("second page = %+v", list.Feeds)
		}
		a.must(listQ, &list, map[string]any{"s": "acme THREATS"})
		if list.Feeds.TotalCount != 1 || list.Feeds.Nodes[0].ID != f.ID {
			t.Errorf("search = %+v", list.Feeds)
		}
		a.must(listQ, &list, map[string]any{"f": map[string]any{"type": []string{"BUILTIN"}, "pollingFrequency": []int{24}}})
		if list.Feeds.TotalCount != 1 || list.Feeds.Nodes[0].Name != "Open Threat Exchange" {
			t.Errorf("filter = %+v", list.Feeds)
		}
		for _, field := range []string{"NAME", "TYPE", "STATUS", "STATUS_MESSAGE", "ENABLED", "POLLING_FREQUENCY",
			"RETENTION_PERIOD", "BACKFILL_DAYS", "DESCRIPTION", "LAST_INGESTION"} {
			a.must(listQ, &list, map[string]any{"o": map[string]any{"field": field}})
			if list.Feeds.TotalCount != 2 {
				t.Errorf("order by %s: %+v", field, list.Feeds)
			}
		}
		expectError(t, a.do(a.root, listQ, nil, map[string]any{"after": "garbage"}), "BAD_USER_INPUT", "after")

		// Enable and disable.
		setEnabled := `mutation($id: ID!, $on: Boolean!, $confirm: Boolean) {
			setFeedEnabled(id: $id, enabled: $on, confirm: $confirm) { status statusMessage enabled } }`
		expectError(t, a.do(a.root, setEnabled, nil, map[string]any{"id": f.ID, "on": false}), "BAD_USER_INPUT", "confirm")
		var en struct{ SetFeedEnabled feedJSON }
		a.must(setEnabled, &en, map[string]any{"id": f.ID, "on": false, "confirm": true})
		if s := en.SetFeedEnabled; s.Enabled || s.Status != "DISABLED" || s.StatusMessage != "Disabled" {
			t.Errorf("disabled = %+v", s)
		}
		expectError(t, a.do(a.root, `mutation($id: ID!) { runFeedNow(id: $id) { id } }`, nil, map[string]any{"id": f.ID}),
			"BAD_USER_INPUT", "id")
		a.must(setEnabled, &en, map[string]any{"id": f.ID, "on": true})
		a.runner.Wait()
		// The password was cleared above: the run now fails on credentials.
		a.must(`query($id: ID!) { feed(id: $id) { `+feedFields+` } }`, &got, map[string]any{"id": f.ID})
		if got.Feed.Status != "ERROR" || got.Feed.StatusMessage != "Invalid Credentials" || got.Feed.LastRun.ErrorKind != "Invalid Credentials" {
			t.Errorf("after enabling without a password: %+v", got.Feed)
		}

		// Saving the corrected password runs the feed at once; runs list,
		// cursor reset.
		a.must(`mutation($id: ID!) { updateFeed(id: $id, input: {password: "pw-secret"}) { id } }`, nil, map[string]any{"id": f.ID})
		a.runner.Wait()
		var runs struct {
			FeedRuns []struct {
				ID, FeedID, ErrorKind string
				Stored                int
				EndedAt               *string
			}
		}
		a.must(`query($id: ID!) { feedRuns(feedId: $id, first: 10) { id feedId errorKind stored endedAt } }`, &runs, map[string]any{"id": f.ID})
		// The first run, the one clearing the password started, the one
		// enabling started, the one the corrected password started.
		if len(runs.FeedRuns) != 4 || runs.FeedRuns[0].ErrorKind != "" || runs.FeedRuns[0].Stored != 2 ||
			runs.FeedRuns[1].ErrorKind != "Invalid Credentials" || runs.FeedRuns[0].FeedID != f.ID || runs.FeedRuns[0].EndedAt == nil {
			t.Errorf("runs = %+v", runs.FeedRuns)
		}
		var reset struct{ ResetFeedCursor feedJSON }
		a.must(`mutation($id: ID!) { resetFeedCursor(id: $id) { cursor } }`, &reset, map[string]any{"id": f.ID})
		if reset.ResetFeedCursor.Cursor != "" {
			t.Errorf("cursor after reset = %q", reset.ResetFeedCursor.Cursor)
		}

		// Delete: the feed and its IoCs go.
		var del struct{ DeleteFeed bool }
		a.must(`mutation($id: ID!) { deleteFeed(id: $id) }`, &del, map[string]any{"id": f.ID})
		if !del.DeleteFeed {
			t.Error("deleteFeed answered false")
		}
		expectError(t, a.do(a.root, `query($id: ID!) { feed(id: $id) { id } }`, nil, map[string]any{"id": f.ID}), "NOT_FOUND", "")
		var n int
		st.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM iocs").Scan(&n)
		if n != 0 {
			t.Errorf("%d IoCs left after deleting their only feed", n)
		}
	})
}

func TestCustomFeedLimitAPI(t *testing.T) {
	st := storetest.NewSQLite(t)
	a := newFeedsAPI(t, st)
	in := func(i int) map[string]any {
		return map[string]any{"in": map[string]any{"category": "TSV", "name": fmt.Sprintf("f%d", i),
			"collectionUrl": "http://127.0.0.1:1/feed.tsv", "pollingFrequency": 24, "retentionPeriod": 30}}
	}
	for i := range store.MaxCustomFeeds {
		a.must(createFeed, nil, in(i))
	}
	errs := a.do(a.root, createFeed, nil, in(31))
	expectError(t, errs, "BAD_USER_INPUT", "")
	if len(errs) == 1 && !strings.Contains(errs[0].Message, "at most 30 custom feeds") {
		t.Errorf("message = %q", errs[0].Message)
	}
	a.runner.Wait()
}

// TestRunNowWhileRunning: Run now on a feed with a run in flight answers
// that it is already running; the feed's next run comes from the scheduler.
func TestRunNowWhileRunning(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a := newFeedsAPI(t, st)
		release := make(chan struct{})
		tsv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release // the run stays in flight until the test lets it end
			fmt.Fprint(w, "ip\t10.1.1.1\tsrc\t90\n")
		}))
		defer tsv.Close()
		defer func() {
			select {
			case <-release:
			default:
				close(release)
			}
		}()

		var created struct{ CreateCustomFeed feedJSON }
		a.must(createFeed, &created, map[string]any{"in": map[string]any{
			"category": "TSV", "name": "held", "collectionUrl": tsv.URL, "pollingFrequency": 6, "retentionPeriod": 30}})
		id := created.CreateCustomFeed.ID
		feedID, _ := strconv.ParseInt(id, 10, 64)
		// Creating runs the feed at once; its run record opens meanwhile.
		for {
			run, err := st.LastRun(ctx, feedID)
			if err == nil && run.EndedAt == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		errs := a.do(a.root, `mutation($id: ID!) { runFeedNow(id: $id) { id } }`, nil, map[string]any{"id": id})
		expectError(t, errs, "CONFLICT", "")
		if len(errs) == 1 && !strings.Contains(errs[0].Message, "already running") {
			t.Errorf("run now on a running feed: %q", errs[0].Message)
		}
		close(release)
		a.runner.Wait()

		// Once the run ended, Run now runs it again.
		a.must(`mutation($id: ID!) { runFeedNow(id: $id) { id } }`, nil, map[string]any{"id": id})
		a.runner.Wait()
		var runs struct{ FeedRuns []struct{ ID string } }
		a.must(`query($id: ID!) { feedRuns(feedId: $id, first: 10) { id } }`, &runs, map[string]any{"id": id})
		if len(runs.FeedRuns) != 2 {
			t.Errorf("%d runs, want the first and the one asked after it", len(runs.FeedRuns))
		}

		var got struct{ Feed struct{ NextRun *time.Time } }
		a.must(`query($id: ID!) { feed(id: $id) { nextRun } }`, &got, map[string]any{"id": id})
		if got.Feed.NextRun == nil || !got.Feed.NextRun.After(time.Now().Add(5*time.Hour)) {
			t.Errorf("nextRun of a feed polled every 6 hours that just ran = %v", got.Feed.NextRun)
		}
		a.must(`mutation($id: ID!) { setFeedEnabled(id: $id, enabled: false, confirm: true) { id } }`, nil, map[string]any{"id": id})
		a.must(`query($id: ID!) { feed(id: $id) { nextRun } }`, &got, map[string]any{"id": id})
		if got.Feed.NextRun != nil {
			t.Errorf("nextRun of a disabled feed = %v", got.Feed.NextRun)
		}

		// The status filter selects by the derived status.
		for status, want := range map[string]int{"DISABLED": 1, "SUCCESS": 0, "ERROR": 0} {
			var list struct{ Feeds struct{ TotalCount int } }
			a.must(`query($s: [FeedStatus!]) { feeds(filter: {type: [CUSTOM], status: $s}) { totalCount } }`, &list,
				map[string]any{"s": []string{status}})
			if list.Feeds.TotalCount != want {
				t.Errorf("custom feeds of status %s: %d, want %d", status, list.Feeds.TotalCount, want)
			}
		}
	})
}
