package graph_test

import (
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

type allowlistEntryJSON struct {
	ID, Kind, Value, Comment, CreatedAt string
}

type lookupAllowJSON struct {
	LookupIocs []struct {
		Value       *string
		Known       bool
		Allowlisted *struct {
			List, Entry      string
			EntryID, Comment *string
		}
	}
}

const addEntry = `mutation($in: AllowlistEntryInput!) { addAllowlistEntry(input: $in) {
	entry { id kind value comment createdAt } removedIocs } }`

func TestAllowlistAPI(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		a := newFeedsAPI(t, st)
		var added struct {
			AddAllowlistEntry struct {
				Entry       allowlistEntryJSON
				RemovedIocs int
			}
		}
		a.must(addEntry, &added, map[string]any{"in": map[string]any{"value": " HTTPS://Example.NET/safe", "comment": "our CDN"}})
		e := added.AddAllowlistEntry.Entry
		if e.Kind != "URL_PREFIX" || e.Value != "https://example.net/safe" || e.Comment != "our CDN" || e.ID == "" || e.CreatedAt == "" {
			t.Errorf("added = %+v", added.AddAllowlistEntry)
		}
		for value, kind := range map[string]string{"192.0.2.1": "IP", "2001:db8::/32": "CIDR", "Example.ORG": "DOMAIN"} {
			a.must(addEntry, &added, map[string]any{"in": map[string]any{"value": value}})
			if added.AddAllowlistEntry.Entry.Kind != kind {
				t.Errorf("%s: kind %s, want %s", value, added.AddAllowlistEntry.Entry.Kind, kind)
			}
		}

		// Bad input is BAD_USER_INPUT naming the field.
		errs := a.do(a.root, addEntry, nil, map[string]any{"in": map[string]any{"value": "not a thing"}})
		expectError(t, errs, "BAD_USER_INPUT", "value")
		if len(errs) == 1 && !strings.Contains(errs[0].Message, "URL prefix") {
			t.Errorf("message %q does not say what is accepted", errs[0].Message)
		}
		errs = a.do(a.root, addEntry, nil, map[string]any{"in": map[string]any{"value": "192.0.2.9", "comment": strings.Repeat("c", 501)}})
		expectError(t, errs, "BAD_USER_INPUT", "comment")
		errs = a.do(a.root, addEntry, nil, map[string]any{"in": map[string]any{"value": "example.org"}})
		if len(errs) != 1 || !strings.Contains(errs[0].Message, "already") {
			t.Errorf("duplicate: %+v", errs)
		}

		var list struct{ AllowlistEntries []allowlistEntryJSON }
		a.must(`{ allowlistEntries { id kind value comment createdAt } }`, &list, nil)
		if len(list.AllowlistEntries) != 4 || list.AllowlistEntries[0].Value != "https://example.net/safe" {
			t.Fatalf("entries = %+v", list.AllowlistEntries)
		}

		// Root only.
		for _, q := range []string{`{ allowlistEntries { id } }`, `mutation { deleteAllowlistEntry(id: "1") }`} {
			if errs := a.do(a.tenant, q, nil, nil); len(errs) != 1 || errs[0].Extensions.Code != "FORBIDDEN" {
				t.Errorf("tenant %s: %+v", q, errs)
			}
		}
		errs = a.do(a.tenant, addEntry, nil, map[string]any{"in": map[string]any{"value": "192.0.2.77"}})
		if len(errs) != 1 || errs[0].Extensions.Code != "FORBIDDEN" {
			t.Errorf("tenant add: %+v", errs)
		}

		// Lookups say which entry covers a value, for any reader.
		var lk lookupAllowJSON
		q := `query($v: [String!]!) { lookupIocs(values: $v) { value known allowlisted { list entry entryId comment } } }`
		vals := []string{"8.8.8.8", "10.9.8.7", "www.youtube.com", "cdn.example.org", "https://example.net/safe/x", "198.51.100.1", "nonsense value"}
		if errs := a.do(a.tenant, q, &lk, map[string]any{"v": vals}); len(errs) > 0 {
			t.Fatalf("lookup: %+v", errs)
		}
		want := []string{"public-dns 8.8.8.8", "reserved 10.0.0.0/8", "cisco_top20k youtube.com", "user example.org",
			"user https://example.net/safe", "", ""}
		for i, r := range lk.LookupIocs {
			got := ""
			if r.Allowlisted != nil {
				got = r.Allowlisted.List + " " + r.Allowlisted.Entry
				if (r.Allowlisted.List == "user") != (r.Allowlisted.EntryID != nil) {
					t.Errorf("%s: entryId %v for list %s", vals[i], r.Allowlisted.EntryID, r.Allowlisted.List)
				}
			}
			if got != want[i] {
				t.Errorf("lookup %s: allowlisted %q, want %q", vals[i], got, want[i])
			}
		}

		// The entries above were added in a map's order: find the domain's.
		var id string
		for _, e := range list.AllowlistEntries {
			if e.Value == "example.org" {
				id = e.ID
			}
		}
		var del struct{ DeleteAllowlistEntry bool }
		a.must(`mutation($id: ID!) { deleteAllowlistEntry(id: $id) }`, &del, map[string]any{"id": id})
		if !del.DeleteAllowlistEntry {
			t.Error("delete answered false")
		}
		errs = a.do(a.root, `mutation($id: ID!) { deleteAllowlistEntry(id: $id) }`, nil, map[string]any{"id": id})
		expectError(t, errs, "NOT_FOUND", "")
		a.must(q, &lk, map[string]any{"v": []string{"cdn.example.org"}})
		if lk.LookupIocs[0].Allowlisted != nil {
			t.Errorf("deleted entry still covers: %+v", lk.LookupIocs[0].Allowlisted)
		}
	})
}

// TestFastLookupsLeaveAllowlistedToGqlgen: the bulk-lookup writer does not
// write the allowlisted field; a selection with it is answered by gqlgen,
// the same as without the writer.
func TestFastLookupsLeaveAllowlistedToGqlgen(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		user := &store.User{ID: 1, Username: "t", Scope: store.ScopeTenant}
		var wrote int
		fast := lookupHandler(st, user, true, &wrote)
		plain := lookupHandler(st, user, false, nil)
		q := `query($v: [String!]!) { lookupIocs(values: $v) { value known allowlisted { list entry } } }`
		vars := map[string]any{"v": []string{"8.8.8.8", "192.0.2.1"}}
		got, want := postRaw(t, fast, q, vars), postRaw(t, plain, q, vars)
		if got != want || wrote != 0 {
			t.Errorf("fast answer (wrote %d) %s\nwant %s", wrote, got, want)
		}
		if !strings.Contains(got, `"allowlisted":{"list":"public-dns","entry":"8.8.8.8"}`) {
			t.Errorf("answer %s lacks the public-dns match", got)
		}
	})
}
