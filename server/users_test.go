package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// gqlAnswer is a GraphQL answer: its data and its errors' codes and fields.
type gqlAnswer struct {
	Data   map[string]json.RawMessage
	Errors []struct {
		Message    string
		Extensions struct{ Code, Field string }
	}
}

func (f *fixture) gqlAs(user, key, query string, vars map[string]any, header map[string]string) gqlAnswer {
	f.t.Helper()
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	r := f.do("POST", "/graphql", user, key, string(b), header)
	var a gqlAnswer
	if err := json.Unmarshal(r.body, &a); err != nil {
		f.t.Fatalf("graphql %s: %d %s", query, r.status, r.body)
	}
	return a
}

func (a gqlAnswer) code() string {
	if len(a.Errors) == 0 {
		return ""
	}
	return a.Errors[0].Extensions.Code
}

func (a gqlAnswer) field() string {
	if len(a.Errors) == 0 {
		return ""
	}
	return a.Errors[0].Extensions.Field
}

func userID(t *testing.T, st *store.Store, name string) string {
	t.Helper()
	u, err := st.UserByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return itoa(int(u.ID))
}

// TestUserRemovalEndsAccess: deleting or disabling a user through the API
// closes their open websocket at once and refuses their key, session and
// password on REST and GraphQL.
func TestUserRemovalEndsAccess(t *testing.T) {
	for _, how := range []string{"deleteUser", "setUserEnabled"} {
		t.Run(how, func(t *testing.T) {
			storetest.EachDB(t, func(t *testing.T, st *store.Store) {
				f := newFixture(t, st)
				cookie := f.login("analyst", "analyst-password")
				withCookie := map[string]string{"Cookie": cookie, "Origin": f.srv.URL}
				byKey := f.dialWS(nil)
				byKey.init(map[string]any{"username": "analyst", "apiKey": f.tenantKey})
				bySession := f.dialWS(http.Header{"Cookie": {cookie}})
				bySession.init(map[string]any{})

				id := userID(t, st, "analyst")
				q := `mutation($id: ID!) { deleteUser(id: $id) }`
				if how == "setUserEnabled" {
					q = `mutation($id: ID!) { setUserEnabled(id: $id, enabled: false) { enabled } }`
				}
				if a := f.gqlAs("admin", adminKey, q, map[string]any{"id": id}, nil); len(a.Errors) != 0 {
					t.Fatalf("%s: %+v", how, a.Errors)
				}
				byKey.closesWithin(5*time.Second, "the key's socket")
				bySession.closesWithin(5*time.Second, "the session's socket")
				checks := map[string]func() int{
					"REST with the key": func() int { return f.do("GET", api+"/tenants", "analyst", f.tenantKey, "", nil).status },
					"REST with the session": func() int {
						return f.do("GET", api+"/tenants", "", "", "", withCookie).status
					},
					"GraphQL with the key": func() int { return f.graphql("analyst", f.tenantKey, `{ me { username } }`).status },
					"GraphQL with the session": func() int {
						return f.do("POST", "/graphql", "", "", `{"query":"{ me { username } }"}`, withCookie).status
					},
					"login": func() int {
						return f.do("POST", "/api/login", "", "", `{"username":"analyst","password":"analyst-password"}`, nil).status
					},
				}
				for name, check := range checks {
					if got := check(); got != http.StatusUnauthorized {
						t.Errorf("%s after %s: %d, want 401", name, how, got)
					}
				}
				if !f.wsRefused(nil, map[string]any{"username": "analyst", "apiKey": f.tenantKey}) {
					t.Error("a new socket with the key: accepted")
				}
				if tn, err := st.Tenant(context.Background(), f.tenantID); err != nil || (how == "deleteUser") != (tn.UserNum == 0) {
					t.Errorf("user_num after %s = %+v, %v", how, tn, err)
				}
			})
		})
	}
}

// TestUserMutationsAreRootOnly: a tenant user is refused each root
// mutation and query, field by field, and changes nothing.
func TestUserMutationsAreRootOnly(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		admin := userID(t, st, "admin")
		for name, q := range map[string]string{
			"users":             `{ users { id } }`,
			"userApiKeys":       `{ userApiKeys(userId: "` + admin + `") { id } }`,
			"createUser":        `mutation { createUser(input: {username: "x", scope: ROOT, password: "password1"}) { id } }`,
			"setUserEnabled":    `mutation { setUserEnabled(id: "` + admin + `", enabled: false) { id } }`,
			"deleteUser":        `mutation { deleteUser(id: "` + admin + `") }`,
			"resetUserPassword": `mutation { resetUserPassword(id: "` + admin + `") { password } }`,
			"createApiKey":      `mutation { createApiKey(name: "x", userId: "` + admin + `") { key } }`,
		} {
			if a := f.gqlAs("analyst", f.tenantKey, q, nil, nil); a.code() != "FORBIDDEN" {
				t.Errorf("%s by a tenant user: %+v", name, a)
			}
		}
		// A root key id is not the tenant user's to revoke.
		k, _, err := st.CreateAPIKey(context.Background(), mustID(t, admin), "x", "")
		if err != nil {
			t.Fatal(err)
		}
		if a := f.gqlAs("analyst", f.tenantKey, `mutation { revokeApiKey(id: "`+itoa(int(k.ID))+`") }`, nil, nil); a.code() != "NOT_FOUND" {
			t.Errorf("revoking root's key as a tenant user: %+v", a)
		}
		if u, _ := st.UserByName(context.Background(), "admin"); !u.Enabled {
			t.Error("the admin was disabled")
		}
		if n, _ := st.CountUsers(context.Background()); n != 2 {
			t.Errorf("%d users, want 2", n)
		}
		// Their own password and keys are theirs to manage.
		if a := f.gqlAs("analyst", f.tenantKey, `mutation { changePassword(currentPassword: "analyst-password", newPassword: "another-password") }`, nil, nil); len(a.Errors) != 0 {
			t.Errorf("changePassword by a tenant user: %+v", a.Errors)
		}
		if a := f.gqlAs("analyst", f.tenantKey, `mutation { createApiKey(name: "mine") { key } }`, nil, nil); len(a.Errors) != 0 {
			t.Errorf("createApiKey for themselves: %+v", a.Errors)
		}
	})
}

func mustID(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUserAdministration: root creates, lists, resets and deletes users
// and manages their keys; the rules on self and on the last root hold.
func TestUserAdministration(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		create := `mutation($in: CreateUserInput!) { createUser(input: $in) { id username scope tenantId enabled mfaEnabled signInMethod lastSignInAt } }`
		a := f.gqlAs("admin", adminKey, create, map[string]any{"in": map[string]any{
			"username": "dora", "scope": "TENANT", "tenantId": f.tenantID, "password": "dora-password"}}, nil)
		var created struct {
			ID, Username, Scope, SignInMethod string
			TenantID                          *string
			Enabled, MfaEnabled               bool
		}
		if err := json.Unmarshal(a.Data["createUser"], &created); err != nil || len(a.Errors) != 0 || created.Username != "dora" ||
			created.Scope != "TENANT" || created.TenantID == nil || *created.TenantID != f.tenantID || !created.Enabled ||
			created.MfaEnabled || created.SignInMethod != "PASSWORD" {
			t.Fatalf("createUser = %s %+v", a.Data["createUser"], a.Errors)
		}
		if tn, _ := st.Tenant(context.Background(), f.tenantID); tn.UserNum != 2 {
			t.Errorf("user_num = %d, want 2", tn.UserNum)
		}
		for name, tc := range map[string]struct {
			in    map[string]any
			field string
		}{
			"taken":          {map[string]any{"username": "dora", "scope": "ROOT", "password": "password1"}, "username"},
			"short password": {map[string]any{"username": "eve", "scope": "ROOT", "password": "short"}, "password"},
			"no tenant":      {map[string]any{"username": "eve", "scope": "TENANT", "password": "password1"}, "tenantId"},
			"unknown tenant": {map[string]any{"username": "eve", "scope": "TENANT", "tenantId": "nope", "password": "password1"}, "tenantId"},
			"bad name":       {map[string]any{"username": "e:ve", "scope": "ROOT", "password": "password1"}, "username"},
		} {
			a := f.gqlAs("admin", adminKey, create, map[string]any{"in": tc.in}, nil)
			if a.code() != "BAD_USER_INPUT" || a.field() != tc.field {
				t.Errorf("%s: %+v, want BAD_USER_INPUT on %s", name, a.Errors, tc.field)
			}
			if strings.Contains(string(mustJSON(a.Errors)), "password1") {
				t.Errorf("%s: the password is in the answer", name)
			}
		}
		a = f.gqlAs("admin", adminKey, `{ users { username enabled } }`, nil, nil)
		if !strings.Contains(string(a.Data["users"]), `"dora"`) || !strings.Contains(string(a.Data["users"]), `"admin"`) {
			t.Errorf("users = %s %+v", a.Data["users"], a.Errors)
		}

		// Keys of another user: created, listed, revoked by root.
		a = f.gqlAs("admin", adminKey, `mutation($id: ID) { createApiKey(name: "dora's", userId: $id) { key apiKey { id } } }`,
			map[string]any{"id": created.ID}, nil)
		var nk struct {
			Key    string
			APIKey struct{ ID string } `json:"apiKey"`
		}
		if err := json.Unmarshal(a.Data["createApiKey"], &nk); err != nil || nk.Key == "" {
			t.Fatalf("createApiKey = %s %+v", a.Data["createApiKey"], a.Errors)
		}
		a = f.gqlAs("admin", adminKey, `query($id: ID!) { userApiKeys(userId: $id) { id name revokedAt } }`, map[string]any{"id": created.ID}, nil)
		if !strings.Contains(string(a.Data["userApiKeys"]), `"dora's"`) {
			t.Errorf("userApiKeys = %s %+v", a.Data["userApiKeys"], a.Errors)
		}
		if f.graphql("dora", nk.Key, `{ me { username } }`).status != http.StatusOK {
			t.Fatal("dora's key does not work")
		}
		if a := f.gqlAs("admin", adminKey, `mutation($id: ID!) { revokeApiKey(id: $id) }`, map[string]any{"id": nk.APIKey.ID}, nil); len(a.Errors) != 0 {
			t.Fatalf("root revoking dora's key: %+v", a.Errors)
		}
		if got := f.graphql("dora", nk.Key, `{ me { username } }`).status; got != http.StatusUnauthorized {
			t.Errorf("dora's revoked key: %d", got)
		}

		// Self and the last root.
		admin := userID(t, st, "admin")
		if a := f.gqlAs("admin", adminKey, `mutation($id: ID!) { deleteUser(id: $id) }`, map[string]any{"id": admin}, nil); a.field() != "id" {
			t.Errorf("deleting yourself: %+v", a.Errors)
		}
		if a := f.gqlAs("admin", adminKey, `mutation($id: ID!) { setUserEnabled(id: $id, enabled: false) { id } }`, map[string]any{"id": admin}, nil); a.field() != "id" {
			t.Errorf("disabling yourself: %+v", a.Errors)
		}
		a = f.gqlAs("admin", adminKey, `mutation { createUser(input: {username: "root2", scope: ROOT, password: "root2-password"}) { id } }`, nil, nil)
		var root2 struct{ ID string }
		_ = json.Unmarshal(a.Data["createUser"], &root2)
		_, root2Key := userKey(t, st, "root2")
		if a := f.gqlAs("root2", root2Key, `mutation($id: ID!) { setUserEnabled(id: $id, enabled: false) { enabled } }`, map[string]any{"id": admin}, nil); len(a.Errors) != 0 {
			t.Fatalf("root2 disabling admin: %+v", a.Errors)
		}
		if a := f.gqlAs("root2", root2Key, `mutation($id: ID!) { deleteUser(id: $id) }`, map[string]any{"id": root2.ID}, nil); a.field() != "id" {
			t.Errorf("root2 deleting itself: %+v", a.Errors)
		}
		if _, err := st.SetUserEnabled(context.Background(), mustID(t, root2.ID), false); err == nil {
			t.Error("the last enabled root was disabled")
		}
	})
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

// TestResetPasswordForcesAChange: after root resets a password, the
// one-time password signs in to a session that can do nothing but
// changePassword (and read me); after the change it can do everything.
func TestResetPasswordForcesAChange(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		old := f.login("analyst", "analyst-password")
		a := f.gqlAs("admin", adminKey, `mutation($id: ID!) { resetUserPassword(id: $id) { password } }`,
			map[string]any{"id": userID(t, st, "analyst")}, nil)
		var once struct{ Password string }
		if err := json.Unmarshal(a.Data["resetUserPassword"], &once); err != nil || len(once.Password) < 8 {
			t.Fatalf("reset = %s %+v", a.Data["resetUserPassword"], a.Errors)
		}
		if got := f.do("POST", "/graphql", "", "", `{"query":"{ me { username } }"}`, map[string]string{"Cookie": old, "Origin": f.srv.URL}).status; got != http.StatusUnauthorized {
			t.Errorf("the session from before the reset: %d", got)
		}
		r := f.do("POST", "/api/login", "", "", `{"username":"analyst","password":"`+once.Password+`"}`, nil)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"must_change_password":true`) {
			t.Fatalf("login with the one-time password: %d %s", r.status, r.body)
		}
		cookie := f.login("analyst", once.Password)
		h := map[string]string{"Cookie": cookie, "Origin": f.srv.URL}
		if a := f.gqlAs("", "", `{ me { username mustChangePassword } }`, nil, h); !strings.Contains(string(a.Data["me"]), `"mustChangePassword":true`) {
			t.Errorf("me = %s %+v", a.Data["me"], a.Errors)
		}
		if a := f.gqlAs("", "", `{ apiKeys { id } }`, nil, h); a.code() != "FORBIDDEN" {
			t.Errorf("apiKeys before the change: %+v", a)
		}
		if a := f.gqlAs("", "", `mutation { createApiKey(name: "x") { key } }`, nil, h); a.code() != "FORBIDDEN" {
			t.Errorf("createApiKey before the change: %+v", a)
		}
		if got := f.do("GET", api+"/tenants", "", "", "", h).status; got != http.StatusForbidden {
			t.Errorf("REST before the change: %d", got)
		}
		// API keys are not bound by the change.
		if got := f.graphql("analyst", f.tenantKey, `{ apiKeys { id } }`).status; got != http.StatusOK {
			t.Errorf("the key before the change: %d", got)
		}
		if a := f.gqlAs("", "", `mutation($c: String!) { changePassword(currentPassword: $c, newPassword: "brand-new-password") }`,
			map[string]any{"c": once.Password}, h); len(a.Errors) != 0 {
			t.Fatalf("changePassword: %+v", a.Errors)
		}
		if a := f.gqlAs("", "", `{ apiKeys { id } }`, nil, h); len(a.Errors) != 0 {
			t.Errorf("apiKeys after the change: %+v", a.Errors)
		}
		if got := f.do("POST", "/api/login", "", "", `{"username":"analyst","password":"brand-new-password"}`, nil); got.status != http.StatusOK ||
			strings.Contains(string(got.body), "must_change") {
			t.Errorf("login with the new password: %d %s", got.status, got.body)
		}
	})
}

// TestChangePasswordThrottlesWrongGuesses: after five wrong current
// passwords, changePassword refuses even the right one for a while.
func TestChangePasswordThrottlesWrongGuesses(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		q := `mutation($c: String!) { changePassword(currentPassword: $c, newPassword: "brand-new-password") }`
		for i := range 5 {
			a := f.gqlAs("analyst", f.tenantKey, q, map[string]any{"c": "wrong-" + itoa(i)}, nil)
			if a.field() != "currentPassword" || !strings.Contains(a.Errors[0].Message, "not your password") {
				t.Fatalf("wrong guess %d: %+v", i, a.Errors)
			}
		}
		a := f.gqlAs("analyst", f.tenantKey, q, map[string]any{"c": "analyst-password"}, nil)
		if a.field() != "currentPassword" || !strings.Contains(a.Errors[0].Message, "too many") {
			t.Errorf("the right password after five wrong ones: %+v", a.Errors)
		}
		if _, err := st.CheckPassword(context.Background(), "analyst", "analyst-password"); err != nil {
			t.Errorf("the password changed: %v", err)
		}
	})
}
