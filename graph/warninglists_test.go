package graph_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"

	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

type warningJSON struct{ List, Entry, Action string }

type warnedIoCs struct {
	Iocs struct {
		TotalCount int
		Nodes      []struct {
			Value    string
			Warnings []warningJSON
		}
		PageInfo struct{ HasNextPage bool }
	}
}

func (w warnedIoCs) values() []string {
	var out []string
	for _, n := range w.Iocs.Nodes {
		s := n.Value
		for _, x := range n.Warnings {
			s += " [" + x.List + " " + x.Entry + " " + x.Action + "]"
		}
		out = append(out, s)
	}
	return out
}

const warnedQuery = `query($w: IocWarnings) { iocs(filter: {warnings: $w}, orderBy: {field: VALUE}) {
	totalCount nodes { value warnings { list entry action } } pageInfo { hasNextPage } } }`

// TestWarninglistsAPI: the lists with their actions; warnings on the IoCs
// page and its filter; an action change applied to the IoCs stored already
// (flag marks, off unmarks, drop removes); own lists imported as text and
// as MISP JSON, and deleted; lookups answer every list that matches.
func TestWarninglistsAPI(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		a := newFeedsAPI(t, st)
		feed := iocTestFeed(t, st, "f")
		// Stored as if before the lists were in force.
		ingestIoCs(t, st, feed, 30*24*time.Hour,
			ioc.Indicator{Kind: ioc.Domain, Value: "a.duckdns.org", Score: 50},
			ioc.Indicator{Kind: ioc.IP, Value: "11.22.33.44", Score: 50},
			ioc.Indicator{Kind: ioc.MD5, Value: "0123456789abcdef0123456789abcdef", Score: 50},
			ioc.Indicator{Kind: ioc.Domain, Value: "payload.zip", Score: 50})

		var lists struct {
			Warninglists []struct {
				Name, Type, Action, DefaultAction string
				EntryCount, Version               int
				Builtin                           bool
				Kinds                             []string
				Note                              *string
			}
		}
		a.must(`{ warninglists { name type action defaultAction entryCount version builtin kinds note } }`, &lists, nil)
		byName := map[string]int{}
		for i, l := range lists.Warninglists {
			byName[l.Name] = i
		}
		for name, action := range map[string]string{"dynamic-dns": "FLAG", "tranco10k": "DROP", "reserved": "DROP", "mozilla-CA": "OFF", "amazon-aws": "FLAG"} {
			i, ok := byName[name]
			if !ok || lists.Warninglists[i].Action != action || !lists.Warninglists[i].Builtin {
				t.Errorf("%s: %+v, want builtin %s", name, lists.Warninglists[i], action)
			}
		}
		if l := lists.Warninglists[byName["common-contact-emails"]]; l.Note == nil || len(l.Kinds) != 0 || l.Type != "regex" {
			t.Errorf("common-contact-emails = %+v, want a note saying why it applies to no kind", l)
		}
		if l := lists.Warninglists[byName["tranco10k"]]; l.EntryCount < 9990 || l.Version == 0 || !slices.Equal(l.Kinds, []string{"DOMAIN"}) {
			t.Errorf("tranco10k = %+v", l)
		}

		var page warnedIoCs
		a.must(warnedQuery, &page, map[string]any{"w": "FLAGGED"})
		if got := page.values(); !slices.Equal(got, []string{"a.duckdns.org [dynamic-dns .duckdns.org FLAG]"}) {
			t.Errorf("flagged = %q", got)
		}
		a.must(warnedQuery, &page, map[string]any{"w": "UNFLAGGED"})
		if got := page.values(); !slices.Equal(got, []string{"0123456789abcdef0123456789abcdef", "11.22.33.44", "payload.zip"}) {
			t.Errorf("unflagged = %q", got)
		}

		// Off unmarks, flag marks again, drop removes.
		const setAction = `mutation($n: String!, $a: WarninglistAction!) { setWarninglistAction(name: $n, action: $a) { list { name action } } }`
		var set struct {
			SetWarninglistAction struct {
				List struct{ Name, Action string }
			}
		}
		a.must(setAction, &set, map[string]any{"n": "dynamic-dns", "a": "OFF"})
		a.must(warnedQuery, &page, map[string]any{"w": "FLAGGED"})
		if set.SetWarninglistAction.List.Action != "OFF" || len(page.Iocs.Nodes) != 0 {
			t.Errorf("off: %+v, flagged %q", set, page.values())
		}
		a.must(setAction, &set, map[string]any{"n": "dynamic-dns", "a": "FLAG"})
		a.must(warnedQuery, &page, map[string]any{"w": "FLAGGED"})
		if len(page.Iocs.Nodes) != 1 {
			t.Errorf("flag again: flagged %q", page.values())
		}
		// Drop removes in the background (list.removing says so meanwhile).
		a.must(setAction, &set, map[string]any{"n": "dynamic-dns", "a": "DROP"})
		a.runner.Allowlist().WaitRemovals()
		a.must(warnedQuery, &page, nil)
		if set.SetWarninglistAction.List.Action != "DROP" || slices.Contains(page.values(), "a.duckdns.org") || len(page.Iocs.Nodes) != 3 {
			t.Errorf("drop: %+v, left %q", set, page.values())
		}
		// removedIocs is deprecated, not gone: a client that still selects
		// it is answered 0, and the schema tells it what to read instead.
		var dead struct{ SetWarninglistAction struct{ RemovedIocs int } }
		dead.SetWarninglistAction.RemovedIocs = -1
		a.must(`mutation { setWarninglistAction(name: "dynamic-dns", action: DROP) { removedIocs } }`, &dead, nil)
		a.runner.Allowlist().WaitRemovals()
		if n := dead.SetWarninglistAction.RemovedIocs; n != 0 {
			t.Errorf("deprecated removedIocs = %d, want 0", n)
		}
		field := graph.NewSchema(&graph.Resolver{}).Schema().Types["WarninglistChanged"].Fields.ForName("removedIocs")
		if d := field.Directives.ForName("deprecated"); d == nil || !strings.Contains(d.Arguments.ForName("reason").Value.Raw, "list { removing }") {
			t.Errorf("removedIocs is not deprecated in favour of list { removing }: %+v", field.Directives)
		}
		var removing struct {
			Warninglists []struct {
				Name     string
				Removing bool
			}
		}
		a.must(`{ warninglists { name removing } }`, &removing, nil)
		for _, l := range removing.Warninglists {
			if l.Removing {
				t.Errorf("%s is removing after the removals ended", l.Name)
			}
		}
		expectError(t, a.do(a.root, setAction, nil, map[string]any{"n": "no-such-list", "a": "OFF"}), "NOT_FOUND", "")

		// Own lists: plain text that flags, MISP JSON that drops.
		const importList = `mutation($in: WarninglistImportInput!) { importWarninglist(input: $in) {
			list { name type entryCount action builtin kinds } } }`
		var imp struct {
			ImportWarninglist struct {
				List struct {
					Name, Type, Action string
					EntryCount         int
					Builtin            bool
					Kinds              []string
				}
			}
		}
		a.must(importList, &imp, map[string]any{"in": map[string]any{"name": "corp", "action": "FLAG",
			"content": "# our ranges\n11.22.33.0/24\nintranet.corp.example\n"}})
		if l := imp.ImportWarninglist.List; l.Type != "mixed" || l.EntryCount != 2 || l.Builtin || l.Action != "FLAG" {
			t.Errorf("text import = %+v", imp.ImportWarninglist)
		}
		a.must(warnedQuery, &page, map[string]any{"w": "FLAGGED"})
		if got := page.values(); !slices.Equal(got, []string{"11.22.33.44 [corp 11.22.33.0/24 FLAG]"}) {
			t.Errorf("flagged by corp = %q", got)
		}
		a.must(importList, &imp, map[string]any{"in": map[string]any{"name": "known-good", "action": "DROP",
			"content": `{"name": "Known good", "description": "d", "version": 3, "type": "string",
				"list": ["0123456789ABCDEF0123456789ABCDEF"], "matching_attributes": ["md5", "filename|md5"]}`}})
		if l := imp.ImportWarninglist.List; l.Type != "string" || !slices.Equal(l.Kinds, []string{"MD5"}) {
			t.Errorf("JSON import = %+v", imp.ImportWarninglist)
		}
		a.runner.Allowlist().WaitRemovals()
		a.must(warnedQuery, &page, nil)
		if slices.Contains(page.values(), "0123456789abcdef0123456789abcdef") {
			t.Errorf("known-good's hash is stored after its removal: %q", page.values())
		}
		for _, tc := range []struct {
			in    map[string]any
			field string
		}{
			{map[string]any{"name": "corp", "action": "FLAG", "content": "192.0.2.1"}, "name"},
			{map[string]any{"name": "tranco10k", "action": "FLAG", "content": "192.0.2.1"}, "name"},
			{map[string]any{"name": "bad name", "action": "FLAG", "content": "192.0.2.1"}, "name"},
			{map[string]any{"name": "re", "action": "FLAG", "content": `{"name":"x","type":"regex","list":["/(a)\\1/"]}`}, "content"},
			{map[string]any{"name": "wide", "action": "DROP", "content": "0.0.0.0/1\n"}, "content"},
		} {
			expectError(t, a.do(a.root, importList, nil, map[string]any{"in": tc.in}), "BAD_USER_INPUT", tc.field)
		}

		// Lookups answer every list that drops or flags a value.
		var lk struct {
			LookupIocs []struct {
				Value    *string
				Warnings []warningJSON
			}
		}
		a.must(`query($v: [String!]!) { lookupIocs(values: $v) { value warnings { list entry action } } }`, &lk,
			map[string]any{"v": []string{"11.22.33.44", "b.duckdns.org", "10.1.2.3", "not a value", "payload.zip"}})
		want := []string{"corp 11.22.33.0/24 FLAG", "dynamic-dns .duckdns.org DROP",
			"reserved 10.0.0.0/8 DROP; rfc1918 10.0.0.0/8 DROP; rfc5735 10.0.0.0/8 FLAG", "", ""}
		for i, r := range lk.LookupIocs {
			var got []string
			for _, w := range r.Warnings {
				got = append(got, w.List+" "+w.Entry+" "+w.Action)
			}
			if strings.Join(got, "; ") != want[i] {
				t.Errorf("lookup %d: warnings %q, want %q", i, got, want[i])
			}
		}

		// Deleting an own list unmarks; built-in lists cannot be deleted.
		var del struct{ DeleteWarninglist bool }
		a.must(`mutation { deleteWarninglist(name: "corp") }`, &del, nil)
		a.must(warnedQuery, &page, map[string]any{"w": "FLAGGED"})
		if !del.DeleteWarninglist || len(page.Iocs.Nodes) != 0 {
			t.Errorf("after delete: flagged %q", page.values())
		}
		expectError(t, a.do(a.root, `mutation { deleteWarninglist(name: "tranco10k") }`, nil, nil), "NOT_FOUND", "")

		// Root only.
		for _, q := range []string{`{ warninglists { name } }`, `mutation { deleteWarninglist(name: "known-good") }`,
			`mutation { setWarninglistAction(name: "tranco10k", action: OFF) { list { name } } }`} {
			if errs := a.do(a.tenant, q, nil, nil); len(errs) != 1 || errs[0].Extensions.Code != "FORBIDDEN" {
				t.Errorf("tenant %s: %+v", q, errs)
			}
		}
	})
}

// listServer serves a plain-text list with a strong ETag, answering 304 to
// a matching If-None-Match as net/http's ServeContent does.
type listServer struct {
	mu                sync.Mutex
	body, etag        string
	gets, notModified int
}

func (s *listServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path != "/list.txt" {
		http.NotFound(w, r)
		return
	}
	s.gets++
	w.Header().Set("ETag", s.etag)
	if r.Header.Get("If-None-Match") == s.etag {
		s.notModified++
	}
	http.ServeContent(w, r, "list.txt", time.Time{}, strings.NewReader(s.body))
}

func (s *listServer) set(body, etag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.etag = body, etag
}

// TestSubscribedWarninglist: a list subscribed by URL is fetched through
// the egress policy, in force at once, and refreshed with its ETag: an
// unchanged list (304) stays, a changed one replaces it.
func TestSubscribedWarninglist(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a := newFeedsAPI(t, st)
		ls := &listServer{}
		ls.set("11.22.33.0/24\n", `"v1"`)
		srv := httptest.NewServer(ls)
		defer srv.Close()

		const subscribe = `mutation($in: WarninglistSubscribeInput!) { subscribeWarninglist(input: $in) { list { name entryCount action url } } }`
		var sub struct {
			SubscribeWarninglist struct {
				List struct {
					Name, Action, URL string
					EntryCount        int
				}
			}
		}
		a.must(subscribe, &sub, map[string]any{"in": map[string]any{"name": "remote", "url": srv.URL + "/list.txt", "action": "FLAG"}})
		if l := sub.SubscribeWarninglist.List; l.EntryCount != 1 || l.Action != "FLAG" || l.URL != srv.URL+"/list.txt" {
			t.Errorf("subscribed = %+v", l)
		}
		flagged := func(kind ioc.Kind, v string) bool { return a.runner.Warninglists().Flagged(kind, v) }
		if !flagged(ioc.IP, "11.22.33.44") {
			t.Error("the subscribed list is not in force")
		}

		// Unchanged: 304, the list stays.
		if err := a.runner.Allowlist().RefreshWarninglists(ctx, true); err != nil {
			t.Fatal(err)
		}
		if ls.gets != 2 || ls.notModified != 1 || !flagged(ioc.IP, "11.22.33.44") {
			t.Errorf("unchanged refresh: %d gets, %d not modified", ls.gets, ls.notModified)
		}
		// Not due yet: no fetch.
		if err := a.runner.Allowlist().RefreshWarninglists(ctx, false); err != nil || ls.gets != 2 {
			t.Errorf("refresh before it is due: %v, %d gets", err, ls.gets)
		}
		// Changed: replaced.
		ls.set("11.22.34.0/24\nremote.example\n", `"v2"`)
		if err := a.runner.Allowlist().RefreshWarninglists(ctx, true); err != nil {
			t.Fatal(err)
		}
		if flagged(ioc.IP, "11.22.33.44") || !flagged(ioc.IP, "11.22.34.1") || !flagged(ioc.Domain, "a.remote.example") {
			t.Error("the changed list is not the one in force")
		}
		// Turned invalid: the last one stays.
		ls.set("not an entry\n", `"v3"`)
		if err := a.runner.Allowlist().RefreshWarninglists(ctx, true); err == nil || !flagged(ioc.IP, "11.22.34.1") {
			t.Errorf("invalid refresh: %v", err)
		}

		for _, tc := range []struct{ url, field string }{
			{"ftp://x.example/l", "url"},
			{"http://user:pw@x.example/l", "url"},
			{srv.URL + "/missing", "url"},
		} {
			ls.set("", "")
			errs := a.do(a.root, subscribe, nil, map[string]any{"in": map[string]any{"name": "other", "url": tc.url, "action": "FLAG"}})
			expectError(t, errs, "BAD_USER_INPUT", tc.field)
			if len(errs) == 1 && strings.Contains(errs[0].Message, "pw") {
				t.Errorf("the error shows the password: %s", errs[0].Message)
			}
		}
	})
}

// TestWarningsFilterPages: the warnings filter pages through the IoCs the
// other filters select, keeping those that qualify, each page continuing
// after the last one kept.
func TestWarningsFilterPages(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		c := iocClient(t, st)
		feed := iocTestFeed(t, st, "f")
		var inds []ioc.Indicator
		for i := range 30 {
			// Every tenth is on dynamic-dns (flag by default).
			v := fmt.Sprintf("host-%02d.corp.test", i)
			if i%10 == 3 {
				v = fmt.Sprintf("host-%02d.duckdns.org", i)
			}
			inds = append(inds, ioc.Indicator{Kind: ioc.Domain, Value: v, Score: 50})
		}
		ingestIoCs(t, st, feed, 30*24*time.Hour, inds...)
		const q = `query($after: String) { iocs(filter: {warnings: FLAGGED}, orderBy: {field: VALUE}, first: 2, after: $after) {
			totalCount totalCountCapped nodes { value } pageInfo { hasNextPage endCursor } } }`
		type page struct {
			Iocs struct {
				TotalCount       int
				TotalCountCapped bool
				Nodes            []struct{ Value string }
				PageInfo         struct {
					HasNextPage bool
					EndCursor   *string
				}
			}
		}
		var got []string
		var after *string
		var pages []bool
		for range 5 {
			var p page
			c.MustPost(q, &p, client.Var("after", after))
			for _, n := range p.Iocs.Nodes {
				got = append(got, n.Value)
			}
			pages = append(pages, p.Iocs.PageInfo.HasNextPage)
			if !p.Iocs.PageInfo.HasNextPage {
				break
			}
			after = p.Iocs.PageInfo.EndCursor
		}
		want := []string{"host-03.duckdns.org", "host-13.duckdns.org", "host-23.duckdns.org"}
		if !slices.Equal(got, want) || !slices.Equal(pages, []bool{true, false}) {
			t.Errorf("flagged pages = %q (hasNextPage %v), want %q in two pages", got, pages, want)
		}
	})
}
