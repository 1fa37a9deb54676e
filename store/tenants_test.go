package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func mustTenant(t *testing.T, st *store.Store, name string) *store.Tenant {
	t.Helper()
	tn, err := st.CreateTenant(context.Background(), store.TenantInput{Name: store.Some(name)}, store.TenantRules{})
	if err != nil {
		t.Fatalf("create tenant %q: %v", name, err)
	}
	return tn
}

func fieldOf(err error) string {
	var v *store.ValidationError
	if errors.As(err, &v) {
		return v.Field
	}
	return ""
}

func TestNormalizeInfo(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"empty stays empty":      {"", ""},
		"object kept":            {`{"a": 1}`, `{"a": 1}`},
		"encoded string kept":    {`"hello"`, `"hello"`},
		"plain text encoded":     {"hello", `"hello"`},
		"quotes escaped":         {`say "hi"`, `"say \"hi\""`},
		"number kept":            {"42", "42"},
		"broken JSON is text":    {`{"a":`, `"{\"a\":"`},
		"round trip is a no-op":  {`"{\"a\":"`, `"{\"a\":"`},
		"unicode text encoded":   {"Zürich", `"Zürich"`},
		"whitespace JSON kept":   {" [1, 2] ", " [1, 2] "},
		"literal null JSON kept": {"null", "null"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := store.NormalizeInfo(tc.in); got != tc.want {
				t.Errorf("NormalizeInfo(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCreateTenantDefaultsAndValidation(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		org, err := st.OrgID(ctx)
		if err != nil || len(org) != 32 {
			t.Fatalf("org id = %q, %v", org, err)
		}
		tn := mustTenant(t, st, "  Acme  ")
		if len(tn.ID) != 32 || tn.Name != "Acme" || tn.AuthenticationMethod != store.AuthSystemDefault ||
			tn.OrgID != org || tn.SSOConfig != nil || tn.IngestionLimit != nil || tn.GroupName != "" ||
			tn.CreatedAt.IsZero() || tn.Info != "" {
			t.Errorf("created tenant = %+v", tn)
		}

		for name, tc := range map[string]struct {
			in        store.TenantInput
			rules     store.TenantRules
			wantField string
		}{
			"no name":            {in: store.TenantInput{}, wantField: "name"},
			"null name":          {in: store.TenantInput{Name: store.Null[string]()}, wantField: "name"},
			"blank name":         {in: store.TenantInput{Name: store.Some("  ")}, wantField: "name"},
			"long name":          {in: store.TenantInput{Name: store.Some(string(make([]byte, 256)))}, wantField: "name"},
			"bad auth method":    {in: store.TenantInput{Name: store.Some("x"), AuthenticationMethod: store.Some("ldap")}, wantField: "authenticationMethod"},
			"empty auth method":  {in: store.TenantInput{Name: store.Some("x"), AuthenticationMethod: store.Some("")}, wantField: "authenticationMethod"},
			"bad email":          {in: store.TenantInput{Name: store.Some("x"), ContactEmail: store.Some("not-an-email")}, wantField: "contactEmail"},
			"named email":        {in: store.TenantInput{Name: store.Some("x"), ContactEmail: store.Some("Bob <bob@example.com>")}, wantField: "contactEmail"},
			"negative limit":     {in: store.TenantInput{Name: store.Some("x"), IngestionLimit: store.Some[int64](-1)}, wantField: "ingestionLimit"},
			"retention on saas":  {in: store.TenantInput{Name: store.Some("x"), RetentionGroup: store.Some("gold")}, rules: store.TenantRules{SaaS: true}, wantField: "retentionGroup"},
			"retention on prem":  {in: store.TenantInput{Name: store.Some("x"), RetentionGroup: store.Some("gold")}},
			"empty retention ok": {in: store.TenantInput{Name: store.Some("x"), RetentionGroup: store.Some("")}, rules: store.TenantRules{SaaS: true}},
			"sso saml":           {in: store.TenantInput{Name: store.Some("x"), AuthenticationMethod: store.Some(store.AuthSSOSAML)}},
			"good email":         {in: store.TenantInput{Name: store.Some("x"), ContactEmail: store.Some("soc@example.com")}},
		} {
			t.Run(name, func(t *testing.T) {
				before, _ := st.Tenants(ctx, store.Page{})
				_, err := st.CreateTenant(ctx, tc.in, tc.rules)
				after, _ := st.Tenants(ctx, store.Page{})
				if tc.wantField == "" {
					if err != nil || len(after) != len(before)+1 {
						t.Fatalf("err = %v, tenants %d -> %d", err, len(before), len(after))
					}
					return
				}
				if got := fieldOf(err); got != tc.wantField {
					t.Errorf("err = %v, field %q, want %q", err, got, tc.wantField)
				}
				if len(after) != len(before) {
					t.Errorf("a refused create stored a tenant: %d -> %d", len(before), len(after))
				}
			})
		}
	})
}

func TestPatchTenantChangesOnlyGivenFields(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		skew, method := true, "metadata"
		tn, err := st.CreateTenant(ctx, store.TenantInput{
			Name: store.Some("Acme"), Contact: store.Some("Ann"), Info: store.Some(`{"tier":1}`),
			MFAEnabled: store.Some(true), IngestionLimit: store.Some[int64](500),
			SSOConfig: store.Some(store.SSOConfig{AllowClockSkew: &skew, SSOConfigMethod: &method}),
		}, store.TenantRules{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.PatchTenant(ctx, tn.ID, store.TenantInput{Name: store.Some("Acme 2"), Address: store.Some("1 Road")}, store.TenantRules{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "Acme 2" || got.Address != "1 Road" || got.Contact != "Ann" || got.Info != `{"tier":1}` ||
			!got.MFAEnabled || got.IngestionLimit == nil || *got.IngestionLimit != 500 ||
			got.SSOConfig == nil || got.SSOConfig.SSOConfigMethod == nil || *got.SSOConfig.SSOConfigMethod != "metadata" ||
			!got.CreatedAt.Equal(tn.CreatedAt) || got.Seq != tn.Seq {
			t.Errorf("after patch = %+v", got)
		}
		// Null resets to the default.
		got, err = st.PatchTenant(ctx, tn.ID, store.TenantInput{Name: store.Some("Acme 2"),
			IngestionLimit: store.Null[int64](), SSOConfig: store.Null[store.SSOConfig](), MFAEnabled: store.Null[bool]()}, store.TenantRules{})
		if err != nil || got.IngestionLimit != nil || got.SSOConfig != nil || got.MFAEnabled {
			t.Errorf("after null patch = %+v, %v", got, err)
		}
		// A refused patch changes nothing.
		_, err = st.PatchTenant(ctx, tn.ID, store.TenantInput{Name: store.Some("Evil"), AuthenticationMethod: store.Some("x")}, store.TenantRules{})
		if fieldOf(err) != "authenticationMethod" {
			t.Errorf("bad patch err = %v", err)
		}
		if again, _ := st.Tenant(ctx, tn.ID); again.Name != "Acme 2" {
			t.Errorf("refused patch renamed the tenant to %q", again.Name)
		}
		if _, err := st.PatchTenant(ctx, "nope", store.TenantInput{Name: store.Some("x")}, store.TenantRules{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("patch unknown = %v", err)
		}
	})
}

func TestTenantListOrderAndPaging(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		var want []string
		for i := range 5 {
			want = append(want, mustTenant(t, st, fmt.Sprintf("t%d", i)).ID)
		}
		ids := func(ts []*store.Tenant) []string {
			var out []string
			for _, t := range ts {
				out = append(out, t.ID)
			}
			return out
		}
		for name, tc := range map[string]struct {
			page store.Page
			want []string
		}{
			"all":           {store.Page{}, want},
			"limit":         {store.Page{Limit: 2}, want[:2]},
			"limit offset":  {store.Page{Limit: 2, Offset: 2}, want[2:4]},
			"offset only":   {store.Page{Offset: 3}, want[3:]},
			"past the end":  {store.Page{Offset: 9}, nil},
			"limit too big": {store.Page{Limit: 50}, want},
		} {
			t.Run(name, func(t *testing.T) {
				got, err := st.Tenants(ctx, tc.page)
				if err != nil || !slices.Equal(ids(got), tc.want) {
					t.Errorf("Tenants(%+v) = %v, %v; want %v", tc.page, ids(got), err, tc.want)
				}
			})
		}
		one, two := -1, 0
		if _, err := store.NewPage(&two, nil); fieldOf(err) != "limit" {
			t.Errorf("limit 0: %v", err)
		}
		if _, err := store.NewPage(nil, &one); fieldOf(err) != "offset" {
			t.Errorf("offset -1: %v", err)
		}
	})
}

func TestTenantGroupRules(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a, b, c := mustTenant(t, st, "a"), mustTenant(t, st, "b"), mustTenant(t, st, "c")

		g, err := st.CreateTenantGroup(ctx, store.TenantGroupInput{Name: store.Some("Gold"),
			Tenants: store.Some([]string{b.ID, a.ID, a.ID}), Logo: store.Some("logo.png")})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g.TenantIDs, []string{a.ID, b.ID}) || g.Name != "Gold" || g.Logo != "logo.png" || len(g.ID) != 32 {
			t.Errorf("group = %+v", g)
		}
		if got, _ := st.Tenant(ctx, a.ID); got.GroupName != "Gold" {
			t.Errorf("tenant's group name = %q", got.GroupName)
		}

		for name, tc := range map[string]struct {
			in           store.TenantGroupInput
			wantField    string
			wantConflict bool
		}{
			"no name":           {in: store.TenantGroupInput{Tenants: store.Some([]string{c.ID})}, wantField: "name"},
			"no tenants":        {in: store.TenantGroupInput{Name: store.Some("x")}, wantField: "tenants"},
			"empty tenants":     {in: store.TenantGroupInput{Name: store.Some("x"), Tenants: store.Some([]string{})}, wantField: "tenants"},
			"blank tenant id":   {in: store.TenantGroupInput{Name: store.Some("x"), Tenants: store.Some([]string{""})}, wantField: "tenants"},
			"unknown tenant":    {in: store.TenantGroupInput{Name: store.Some("x"), Tenants: store.Some([]string{c.ID, "nope"})}, wantField: "tenants"},
			"taken name":        {in: store.TenantGroupInput{Name: store.Some("Gold"), Tenants: store.Some([]string{c.ID})}, wantConflict: true},
			"tenant in a group": {in: store.TenantGroupInput{Name: store.Some("x"), Tenants: store.Some([]string{c.ID, a.ID})}, wantConflict: true},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := st.CreateTenantGroup(ctx, tc.in)
				if tc.wantConflict != errors.Is(err, store.ErrConflict) || fieldOf(err) != tc.wantField {
					t.Errorf("err = %v", err)
				}
				if groups, _ := st.TenantGroups(ctx, store.Page{}); len(groups) != 1 {
					t.Errorf("groups after refused create = %d", len(groups))
				}
				if got, _ := st.Tenant(ctx, c.ID); got.GroupID != nil {
					t.Errorf("refused create grouped tenant c")
				}
			})
		}
		_, err = st.CreateTenantGroup(ctx, store.TenantGroupInput{Name: store.Some("x"), Tenants: store.Some([]string{a.ID})})
		if err == nil || !errors.Is(err, store.ErrConflict) || !containsAll(err.Error(), `"a"`, `"Gold"`) || strings.Contains(err.Error(), a.ID) {
			t.Errorf("conflict message does not name the tenant and the group (by name, not id): %v", err)
		}

		// PATCH replaces the membership; omitted tenants leave the group.
		g, err = st.PatchTenantGroup(ctx, g.ID, store.TenantGroupInput{Name: store.Some("Platinum"), Tenants: store.Some([]string{c.ID, b.ID})})
		if err != nil || !slices.Equal(g.TenantIDs, []string{b.ID, c.ID}) || g.Name != "Platinum" || g.Logo != "logo.png" {
			t.Fatalf("patched = %+v, %v", g, err)
		}
		if got, _ := st.Tenant(ctx, a.ID); got.GroupID != nil {
			t.Errorf("tenant a still in group after being left out")
		}
		// Without tenants, PATCH keeps the membership.
		g, err = st.PatchTenantGroup(ctx, g.ID, store.TenantGroupInput{Name: store.Some("Platinum"), Logo: store.Null[string]()})
		if err != nil || !slices.Equal(g.TenantIDs, []string{b.ID, c.ID}) || g.Logo != "" {
			t.Errorf("patched without tenants = %+v, %v", g, err)
		}
		if _, err := st.PatchTenantGroup(ctx, g.ID, store.TenantGroupInput{Name: store.Some("P"), Tenants: store.Some([]string{})}); fieldOf(err) != "tenants" {
			t.Errorf("patch with empty tenants: %v", err)
		}
		if _, err := st.PatchTenantGroup(ctx, "nope", store.TenantGroupInput{Name: store.Some("P")}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("patch unknown group: %v", err)
		}

		// Deleting tenants: the group goes with its last one.
		if gid, err := st.DeleteTenant(ctx, b.ID); err != nil || gid != "" {
			t.Fatalf("delete b = %q, %v", gid, err)
		}
		if gid, err := st.DeleteTenant(ctx, c.ID); err != nil || gid != g.ID {
			t.Fatalf("delete c = %q, %v", gid, err)
		}
		if _, err := st.TenantGroup(ctx, g.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("group survived its last tenant: %v", err)
		}
		if _, err := st.DeleteTenant(ctx, c.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("delete twice: %v", err)
		}

		// Deleting a group keeps its tenants.
		d := mustTenant(t, st, "d")
		g2, err := st.CreateTenantGroup(ctx, store.TenantGroupInput{Name: store.Some("Silver"), Tenants: store.Some([]string{a.ID, d.ID})})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteTenantGroup(ctx, g2.ID); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{a.ID, d.ID} {
			if got, err := st.Tenant(ctx, id); err != nil || got.GroupID != nil || got.GroupName != "" {
				t.Errorf("tenant %s after group delete = %+v, %v", id, got, err)
			}
		}
		if err := st.DeleteTenantGroup(ctx, g2.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("delete group twice: %v", err)
		}
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestTenantGroupConcurrency(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		var pool []string
		for i := range 6 {
			pool = append(pool, mustTenant(t, st, fmt.Sprintf("t%d", i)).ID)
		}
		g, err := st.CreateTenantGroup(ctx, store.TenantGroupInput{Name: store.Some("G"), Tenants: store.Some(pool[:1])})
		if err != nil {
			t.Fatal(err)
		}
		// 20 patches, each with its own membership: the result is exactly one.
		requests := make([][]string, 20)
		for i := range requests {
			requests[i] = []string{pool[i%6], pool[(i+1)%6], pool[(i+3)%6]}
			slices.Sort(requests[i])
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(requests))
		for _, ids := range requests {
			wg.Go(func() {
				_, err := st.PatchTenantGroup(ctx, g.ID, store.TenantGroupInput{Name: store.Some("G"), Tenants: store.Some(ids)})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("concurrent patch: %v", err)
			}
		}
		got, err := st.TenantGroup(ctx, g.ID)
		if err != nil {
			t.Fatal(err)
		}
		members := slices.Clone(got.TenantIDs)
		slices.Sort(members)
		if !slices.ContainsFunc(requests, func(r []string) bool { return slices.Equal(r, members) }) {
			t.Errorf("membership %v is none of the requests", members)
		}

		// Concurrent creates of one name: exactly one wins.
		var wins, conflicts int
		var mu sync.Mutex
		for i := range 20 {
			wg.Go(func() {
				_, err := st.CreateTenantGroup(ctx, store.TenantGroupInput{Name: store.Some("Race"),
					Tenants: store.Some([]string{pool[i%6]})})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case errors.Is(err, store.ErrConflict):
					conflicts++
				default:
					t.Errorf("concurrent create: %v", err)
				}
			})
		}
		wg.Wait()
		if wins != 1 || conflicts != 19 {
			t.Errorf("wins = %d, conflicts = %d", wins, conflicts)
		}

		// Concurrent deletes of the last tenants of a group leave no empty group.
		x, y := mustTenant(t, st, "x"), mustTenant(t, st, "y")
		g3, err := st.CreateTenantGroup(ctx, store.TenantGroupInput{Name: store.Some("Pair"), Tenants: store.Some([]string{x.ID, y.ID})})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{x.ID, y.ID} {
			wg.Go(func() {
				if _, err := st.DeleteTenant(ctx, id); err != nil {
					t.Errorf("delete %s: %v", id, err)
				}
			})
		}
		wg.Wait()
		if _, err := st.TenantGroup(ctx, g3.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("group of two concurrently deleted tenants survived: %v", err)
		}
	})
}

// TestTenantReadMatchesList checks that the one-tenant read (its own
// statement) answers what the list answers: group name, users counted,
// and not found for an unknown id.
func TestTenantReadMatchesList(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		var ids []string
		for i, users := range []int{2, 1, 0} {
			tn, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some(fmt.Sprintf("t%d", i))}, store.TenantRules{})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, tn.ID)
			for u := range users {
				if _, err := st.CreateUser(ctx, fmt.Sprintf("u%d-%d", i, u), "password1", store.ScopeTenant, &tn.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := st.CreateTenantGroup(ctx, store.TenantGroupInput{Name: store.Some("Gold"), Tenants: store.Some(ids[:1])}); err != nil {
			t.Fatal(err)
		}
		list, err := st.Tenants(ctx, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range list {
			got, err := st.Tenant(ctx, want.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.UserNum != []int{2, 1, 0}[i] || got.GroupName != want.GroupName || got.UserNum != want.UserNum || got.Name != want.Name {
				t.Errorf("tenant %d = %+v, list has %+v", i, got, want)
			}
		}
		if list[0].GroupName != "Gold" {
			t.Errorf("group name %q", list[0].GroupName)
		}
		if _, err := st.Tenant(ctx, "no-such-tenant"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown tenant: %v", err)
		}
	})
}

// TestTenantReadBesideWriter checks that reading a tenant does not wait for
// a write transaction: on SQLite it used to queue for the one connection
// the transaction holds. The read sees what was committed.
func TestTenantReadBesideWriter(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		st.SetTenantCacheTTL(0) // the database's read is under test
		tn, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some("Acme")}, store.TenantRules{})
		if err != nil {
			t.Fatal(err)
		}
		tx, err := st.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.NewUpdate().Table("tenants").Set("name = ?", "Renamed").Where("id = ?", tn.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		// Generous: the read takes microseconds; before, it waited forever.
		readCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		got, err := st.Tenant(readCtx, tn.ID)
		if err != nil {
			t.Fatalf("tenant read during a write transaction: %v", err)
		}
		if got.Name != "Acme" {
			t.Errorf("read %q during the transaction, want the committed %q", got.Name, "Acme")
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if got, err := st.Tenant(ctx, tn.ID); err != nil || got.Name != "Renamed" {
			t.Errorf("after commit: %v, %v; want Renamed", got, err)
		}
	})
}

// TestTenantCacheFollowsWrites checks that a cached tenant answer never
// outlives a write through the store that changes it (the tenant, its
// group's name, its users' count), and that a change the store did not make
// shows once another instance's event (ForgetTenants) or the TTL drops it.
func TestTenantCacheFollowsWrites(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		st.SetTenantCacheTTL(time.Hour) // only writes and events drop answers
		writes := 0
		st.OnTenantWrite(func() { writes++ })
		tn := mustTenant(t, st, "Acme")
		read := func() *store.Tenant {
			t.Helper()
			got, err := st.Tenant(ctx, tn.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		read().Name = "changed by a caller" // answers are copies
		if got := read(); got.Name != "Acme" || got.UserNum != 0 || got.GroupName != "" {
			t.Fatalf("first read: %+v", got)
		}
		if _, err := st.PatchTenant(ctx, tn.ID, store.TenantInput{Name: store.Some("Acme 2")}, store.TenantRules{}); err != nil {
			t.Fatal(err)
		}
		if got := read(); got.Name != "Acme 2" {
			t.Errorf("after patch: name %q", got.Name)
		}
		if _, err := st.CreateUser(ctx, "acme-user", "password1", store.ScopeTenant, &tn.ID); err != nil {
			t.Fatal(err)
		}
		if got := read(); got.UserNum != 1 {
			t.Errorf("after a user was added: user_num %d", got.UserNum)
		}
		g, err := st.CreateTenantGroup(ctx, store.TenantGroupInput{Name: store.Some("Gold"), Tenants: store.Some([]string{tn.ID})})
		if err != nil {
			t.Fatal(err)
		}
		if got := read(); got.GroupName != "Gold" {
			t.Errorf("after grouping: group %q", got.GroupName)
		}
		if _, err := st.PatchTenantGroup(ctx, g.ID, store.TenantGroupInput{Name: store.Some("Platinum")}); err != nil {
			t.Fatal(err)
		}
		if got := read(); got.GroupName != "Platinum" {
			t.Errorf("after the group's rename: group %q", got.GroupName)
		}
		other := mustTenant(t, st, "Other")
		if err := st.DeleteTenantGroup(ctx, g.ID); err != nil {
			t.Fatal(err)
		}
		if got := read(); got.GroupName != "" {
			t.Errorf("after the group's delete: group %q", got.GroupName)
		}
		if writes != 7 {
			t.Errorf("%d writes announced, want 7 (tenant x3, user, group x3)", writes)
		}

		// A change outside the store (another instance, SQL) is not seen
		// until the event arrives.
		if _, err := st.DB.ExecContext(ctx, "UPDATE tenants SET name = ? WHERE id = ?", "Outside", tn.ID); err != nil {
			t.Fatal(err)
		}
		if got := read(); got.Name != "Acme 2" {
			t.Fatalf("the cache did not answer: %q", got.Name)
		}
		st.ForgetTenants()
		if got := read(); got.Name != "Outside" {
			t.Errorf("after ForgetTenants: name %q", got.Name)
		}

		// Without an event, the TTL bounds how long it is stale.
		st.SetTenantCacheTTL(time.Millisecond)
		st.ForgetTenants() // what was cached for an hour
		read()
		if _, err := st.DB.ExecContext(ctx, "UPDATE tenants SET name = ? WHERE id = ?", "Later", tn.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		if got := read(); got.Name != "Later" {
			t.Errorf("past the TTL: name %q", got.Name)
		}

		if _, err := st.DeleteTenant(ctx, other.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DeleteTenant(ctx, tn.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Tenant(ctx, tn.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
	})
}
