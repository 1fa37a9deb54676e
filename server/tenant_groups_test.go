package server_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

type groupWire struct {
	TgrpID    string   `json:"tgrp_id"`
	TgrpName  string   `json:"tgrp_name"`
	Tenants   []string `json:"tenants"`
	TgrpLogo  string   `json:"tgrp_logo"`
	OrgID     string   `json:"org_id"`
	CreatedAt int64    `json:"created_at"`
	UpdatedAt int64    `json:"updated_at"`
}

func (f *fixture) tenantIDs(names ...string) []string {
	var ids []string
	for _, n := range names {
		ids = append(ids, f.createTenantREST(`{"cust_name":"` + n + `"}`)["cust_id"].(string))
	}
	return ids
}

func groupBody(name string, tenants []string, extra string) string {
	b, _ := json.Marshal(tenants)
	return `{"tgrp_name":"` + name + `","tenants":` + string(b) + extra + `}`
}

func groupCount(t *testing.T, st *store.Store) int {
	t.Helper()
	gs, err := st.TenantGroups(context.Background(), store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	return len(gs)
}

func groupOf(t *testing.T, st *store.Store, tenantID string) string {
	t.Helper()
	tn, err := st.Tenant(context.Background(), tenantID)
	if err != nil {
		t.Fatal(err)
	}
	return tn.GroupName
}

func TestTenantGroupsREST(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		ids := f.tenantIDs("a", "b", "c", "d")
		a, b, c, d := ids[0], ids[1], ids[2], ids[3]
		org, _ := st.OrgID(context.Background())

		// Create, with the trailing slash; the wire shape is exactly the spec's.
		r := f.rest("POST", "/tenant_groups/", groupBody("Gold", []string{b, a}, `,"tgrp_logo":"https://logo.example/g.png"`))
		if r.status != http.StatusCreated {
			t.Fatalf("create group: %d %s", r.status, r.body)
		}
		raw := data[map[string]any](t, r)
		if keys := slices.Sorted(maps.Keys(raw)); !slices.Equal(keys,
			[]string{"created_at", "org_id", "tenants", "tgrp_id", "tgrp_logo", "tgrp_name", "updated_at"}) {
			t.Errorf("group fields = %v", keys)
		}
		if _, ok := raw["created_at"].(float64); !ok {
			t.Errorf("created_at = %#v, want a number", raw["created_at"])
		}
		g := data[groupWire](t, r)
		if len(g.TgrpID) != 32 || g.TgrpName != "Gold" || !slices.Equal(g.Tenants, []string{a, b}) ||
			g.TgrpLogo != "https://logo.example/g.png" || g.OrgID != org || g.CreatedAt < 1700000000 || g.UpdatedAt < g.CreatedAt {
			t.Errorf("created group = %+v", g)
		}
		if groupOf(t, st, a) != "Gold" || groupOf(t, st, c) != "" {
			t.Errorf("stored membership wrong")
		}
		if tn := data[map[string]any](t, f.rest("GET", "/tenants/"+a, "")); tn["tgrp_name"] != "Gold" {
			t.Errorf("tenant's tgrp_name = %v", tn["tgrp_name"])
		}

		// Without the trailing slash.
		r = f.rest("POST", "/tenant_groups", groupBody("Silver", []string{c}, ""))
		if r.status != http.StatusCreated {
			t.Fatalf("POST /tenant_groups: %d %s", r.status, r.body)
		}
		silver := data[groupWire](t, r)

		// Reads.
		r = f.rest("GET", "/tenant_groups/"+g.TgrpID, "")
		if got := data[groupWire](t, r); r.status != 200 || got.TgrpID != g.TgrpID || !slices.Equal(got.Tenants, []string{a, b}) {
			t.Errorf("GET group = %d %s", r.status, r.body)
		}
		r = f.rest("GET", "/tenant_groups", "")
		if list := data[[]groupWire](t, r); len(list) != 2 || list[0].TgrpName != "Gold" || list[1].TgrpName != "Silver" {
			t.Errorf("group list = %s", r.body)
		}
		if list := data[[]groupWire](t, f.rest("GET", "/tenant_groups?limit=1&offset=1", "")); len(list) != 1 || list[0].TgrpName != "Silver" {
			t.Errorf("group page = %+v", list)
		}
		wantError(t, f.rest("GET", "/tenant_groups/no-such-group", ""), 404, "not_found", "")

		// Refused creates change nothing.
		for name, tc := range map[string]struct {
			body          string
			status        int
			code, field   string
			wantInMessage string
		}{
			"missing name":      {`{"tenants":["` + d + `"]}`, 422, "invalid_field", "tgrp_name", ""},
			"missing tenants":   {`{"tgrp_name":"x"}`, 422, "invalid_field", "tenants", ""},
			"empty tenants":     {groupBody("x", []string{}, ""), 422, "invalid_field", "tenants", ""},
			"null tenants":      {`{"tgrp_name":"x","tenants":null}`, 422, "invalid_field", "tenants", ""},
			"empty tenant id":   {groupBody("x", []string{""}, ""), 422, "invalid_field", "tenants", ""},
			"unknown tenant id": {groupBody("x", []string{d, "no-such-tenant"}, ""), 422, "invalid_field", "tenants", "no-such-tenant"},
			"tenant in a group": {groupBody("x", []string{d, a}, ""), 409, "conflict", "", `"Gold"`},
			"taken name":        {groupBody("Gold", []string{d}, ""), 409, "conflict", "", "Gold"},
			"tenants not array": {`{"tgrp_name":"x","tenants":"` + d + `"}`, 400, "invalid_type", "tenants", ""},
			"name not string":   {`{"tgrp_name":1,"tenants":["` + d + `"]}`, 400, "invalid_type", "tgrp_name", ""},
			"unknown field":     {`{"tgrp_name":"x","tenants":["` + d + `"],"owner":"me"}`, 400, "unknown_field", "owner", ""},
			"malformed JSON":    {`{"tgrp_name":"x",`, 400, "invalid_json", "", ""},
			"over the limit":    {groupBody(strings.Repeat("x", 2048), []string{d}, ""), 413, "body_too_large", "", ""},
		} {
			t.Run(name, func(t *testing.T) {
				before := groupCount(t, st)
				r := f.rest("POST", "/tenant_groups/", tc.body)
				wantError(t, r, tc.status, tc.code, tc.field)
				if !strings.Contains(string(r.body), strings.ReplaceAll(tc.wantInMessage, `"`, `\"`)) {
					t.Errorf("message does not name %s: %s", tc.wantInMessage, r.body)
				}
				if groupCount(t, st) != before || groupOf(t, st, d) != "" {
					t.Errorf("a refused create changed the groups")
				}
			})
		}

		// PATCH: the tenants array replaces the membership.
		r = f.rest("PATCH", "/tenant_groups/"+g.TgrpID, groupBody("Platinum", []string{d, b}, ""))
		patched := data[groupWire](t, r)
		if r.status != 200 || patched.TgrpName != "Platinum" || !slices.Equal(patched.Tenants, []string{b, d}) ||
			patched.TgrpLogo != "https://logo.example/g.png" || patched.CreatedAt != g.CreatedAt {
			t.Errorf("PATCH group = %d %s", r.status, r.body)
		}
		if groupOf(t, st, a) != "" || groupOf(t, st, d) != "Platinum" {
			t.Errorf("membership not replaced: a in %q, d in %q", groupOf(t, st, a), groupOf(t, st, d))
		}
		// Without tenants the membership stays; tgrp_logo alone changes.
		r = f.rest("PATCH", "/tenant_groups/"+g.TgrpID, `{"tgrp_name":"Platinum","tgrp_logo":""}`)
		if got := data[groupWire](t, r); r.status != 200 || !slices.Equal(got.Tenants, []string{b, d}) || got.TgrpLogo != "" {
			t.Errorf("PATCH without tenants = %d %s", r.status, r.body)
		}
		before, _ := st.TenantGroup(context.Background(), g.TgrpID)
		wantError(t, f.rest("PATCH", "/tenant_groups/"+g.TgrpID, `{"tenants":["`+a+`"]}`), 422, "invalid_field", "tgrp_name")
		wantError(t, f.rest("PATCH", "/tenant_groups/"+g.TgrpID, groupBody("Platinum", []string{}, "")), 422, "invalid_field", "tenants")
		wantError(t, f.rest("PATCH", "/tenant_groups/"+g.TgrpID, groupBody("Platinum", []string{a, c}, "")), 409, "conflict", "")
		wantError(t, f.rest("PATCH", "/tenant_groups/"+g.TgrpID, groupBody("Silver", []string{a}, "")), 409, "conflict", "")
		wantError(t, f.rest("PATCH", "/tenant_groups/no-such-group", groupBody("x", []string{a}, "")), 404, "not_found", "")
		after, _ := st.TenantGroup(context.Background(), g.TgrpID)
		if after.Name != before.Name || !slices.Equal(after.TenantIDs, before.TenantIDs) || groupOf(t, st, a) != "" {
			t.Errorf("refused PATCHes changed the group: %+v", after)
		}

		// DELETE removes only the container.
		r = f.rest("DELETE", "/tenant_groups/"+g.TgrpID, "")
		if msg := data[string](t, r); r.status != 200 || msg == "" {
			t.Errorf("DELETE group = %d %s", r.status, r.body)
		}
		wantError(t, f.rest("GET", "/tenant_groups/"+g.TgrpID, ""), 404, "not_found", "")
		wantError(t, f.rest("DELETE", "/tenant_groups/"+g.TgrpID, ""), 404, "not_found", "")
		for _, id := range []string{b, d} {
			if tn := data[map[string]any](t, f.rest("GET", "/tenants/"+id, "")); tn["tgrp_name"] != "" {
				t.Errorf("tenant %s after group delete: %v", id, tn)
			}
		}

		// Deleting the last tenant of a group deletes the group.
		r = f.rest("DELETE", "/tenants/"+c, "")
		if r.status != 200 || !strings.Contains(string(r.body), silver.TgrpID) {
			t.Errorf("DELETE last tenant = %d %s", r.status, r.body)
		}
		wantError(t, f.rest("GET", "/tenant_groups/"+silver.TgrpID, ""), 404, "not_found", "")
		// ... but not while others remain.
		r = f.rest("POST", "/tenant_groups/", groupBody("Pair", []string{a, b}, ""))
		pair := data[groupWire](t, r)
		f.rest("DELETE", "/tenants/"+a, "")
		if got := data[groupWire](t, f.rest("GET", "/tenant_groups/"+pair.TgrpID, "")); !slices.Equal(got.Tenants, []string{b}) {
			t.Errorf("group after deleting one of two tenants = %+v", got)
		}
	})
}

// call is one request from a goroutine: no t.Fatal off the test goroutine.
func (f *fixture) call(method, path, body string) (int, error) {
	req, err := http.NewRequest(method, f.srv.URL+api+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth("admin", adminKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

func TestTenantGroupsRESTConcurrency(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		pool := f.tenantIDs("t0", "t1", "t2", "t3", "t4", "t5")
		g := data[groupWire](t, f.rest("POST", "/tenant_groups/", groupBody("G", pool[:1], "")))

		// 20 PATCHes at once, each with its own membership: the result is
		// exactly one of them, never a mix.
		requests := make([][]string, 20)
		for i := range requests {
			requests[i] = []string{pool[i%6], pool[(i+2)%6]}
			if i%3 == 0 {
				requests[i] = append(requests[i], pool[(i+5)%6])
			}
			slices.Sort(requests[i])
			requests[i] = slices.Compact(requests[i])
		}
		var wg sync.WaitGroup
		statuses := make([]int, len(requests))
		for i, ids := range requests {
			wg.Go(func() {
				status, err := f.call("PATCH", "/tenant_groups/"+g.TgrpID, groupBody("G", ids, ""))
				if err != nil {
					t.Error(err)
				}
				statuses[i] = status
			})
		}
		wg.Wait()
		for i, s := range statuses {
			if s != 200 {
				t.Errorf("PATCH %d: status %d", i, s)
			}
		}
		got := data[groupWire](t, f.rest("GET", "/tenant_groups/"+g.TgrpID, ""))
		members := slices.Sorted(slices.Values(got.Tenants))
		if !slices.ContainsFunc(requests, func(r []string) bool { return slices.Equal(r, members) }) {
			t.Errorf("membership %v is none of the requests", members)
		}
		// The tenants' side agrees with the group's.
		for _, id := range pool {
			if in := groupOf(t, st, id) == "G"; in != slices.Contains(members, id) {
				t.Errorf("tenant %s: in group %v, listed %v", id, in, slices.Contains(members, id))
			}
		}

		// 20 creates of one name at once: exactly one 201, the rest 409.
		var mu sync.Mutex
		count := map[int]int{}
		for i := range 20 {
			wg.Go(func() {
				status, err := f.call("POST", "/tenant_groups/", groupBody("Race", []string{pool[i%6]}, ""))
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				count[status]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if count[201] != 1 || count[409] != 19 {
			t.Errorf("statuses of concurrent creates = %v, want one 201 and nineteen 409", count)
		}
		if n := groupCount(t, st); n != 2 {
			t.Errorf("groups = %d, want 2", n)
		}
	})
}
