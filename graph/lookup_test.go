package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestLookupIocs(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		tenant, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some("t1")}, store.TenantRules{})
		if err != nil {
			t.Fatal(err)
		}
		u, err := st.CreateUser(ctx, "analyst", "password1", store.ScopeTenant, &tenant.ID)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Truncate(time.Second)
		for _, row := range []store.IoC{
			{Type: ioc.IP, Value: "203.0.113.7", Score: 90, Tags: []string{"emerging_threat"}},
			{Type: ioc.Domain, Value: "xn--bcher-kva.example", Score: 40, Tags: []string{}},
			{Type: ioc.MD5, Value: "d41d8cd98f00b204e9800998ecf8427e", Score: 70, Tags: []string{"malware"}},
			{Type: ioc.URL, Value: "http://evil.example/x", Score: 60, Tags: []string{}},
		} {
			row.FirstSeen, row.LastSeen, row.ExpiresAt = now, now, now.Add(24*time.Hour)
			if _, err := st.DB.NewInsert().Model(&row).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		c := asUser(t, st, u)
		var resp struct {
			LookupIocs []struct {
				Input, Type, Value string
				Known              bool
				Error              *string
				Ioc                *struct {
					Score int
					Tags  []string
				}
			}
		}
		c.MustPost(`query($v: [String!]!) { lookupIocs(values: $v) { input type value known error ioc { score tags } } }`,
			&resp, client.Var("v", []string{
				" 203.0.113.7 ",                    // known, white space trimmed
				"BÜCHER.example.",                  // known through IDN + case + trailing dot
				"D41D8CD98F00B204E9800998ECF8427E", // known, upper-case hash
				"hxxp://EVIL.example/x",            // known, defanged and upper-case host
				"198.51.100.1",                     // valid, unknown
				"not a value!",                     // invalid
				"203.0.113.7",                      // duplicates answered too
			}))
		got := resp.LookupIocs
		if len(got) != 7 {
			t.Fatalf("got %d answers, want 7: %+v", len(got), got)
		}
		for i, want := range []struct {
			typ   string
			known bool
			score int
		}{{"IP", true, 90}, {"DOMAIN", true, 40}, {"MD5", true, 70}, {"URL", true, 60}, {"IP", false, 0}, {"", false, 0}, {"IP", true, 90}} {
			g := got[i]
			if g.Type != want.typ || g.Known != want.known || (want.known && (g.Ioc == nil || g.Ioc.Score != want.score)) {
				t.Errorf("answer %d for %q = %+v, want %+v", i, g.Input, g, want)
			}
		}
		if got[5].Error == nil || got[5].Value != "" {
			t.Errorf("invalid value answer = %+v, want an error and no value", got[5])
		}
		if got[1].Value != "xn--bcher-kva.example" {
			t.Errorf("normalised value = %q", got[1].Value)
		}

		tooMany := make([]string, 10001)
		for i := range tooMany {
			tooMany[i] = fmt.Sprintf("10.0.%d.%d", i/256, i%256)
		}
		err = c.Post(`query($v: [String!]!) { lookupIocs(values: $v) { known } }`, &resp, client.Var("v", tooMany))
		if err == nil || !strings.Contains(err.Error(), "BAD_USER_INPUT") {
			t.Errorf("10,001 values: %v", err)
		}
		// 10,000 values is the documented maximum and must work.
		c.MustPost(`query($v: [String!]!) { lookupIocs(values: $v) { known } }`, &resp, client.Var("v", tooMany[:10000]))
		if len(resp.LookupIocs) != 10000 {
			t.Errorf("10,000 values answered %d", len(resp.LookupIocs))
		}
	})
}

func ptr[T any](v T) *T { return &v }
