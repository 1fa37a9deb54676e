package notify

import (
	"slices"
	"testing"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/ioc"
)

// Every kind of asset hits what it covers and nothing else.
func TestIndexEveryKindHitsAndMisses(t *testing.T) {
	b := NewIndexBuilder()
	assets := []struct {
		tenant, raw string
	}{
		{"a", "192.0.2.10"},
		{"a", "198.51.100.0/24"},
		{"b", "198.51.100.0/25"},
		{"a", "2001:db8::/32"},
		{"a", "Example.ORG"},
		{"b", "https://Portal.example.net/app"},
		{"b", "203.0.113.5"},
	}
	type entry = struct{ tenant, raw string }
	byID := map[int64]entry{}
	for i, a := range assets {
		kind, value, err := allowlist.ParseEntry(a.raw)
		if err != nil {
			t.Fatal(err)
		}
		b.Add(int64(i+1), kind, value)
		byID[int64(i+1)] = a
	}
	x := b.Build()
	cases := []struct {
		kind  ioc.Kind
		value string
		want  []string // "tenant:asset"
	}{
		{ioc.IP, "192.0.2.10", []string{"a:192.0.2.10"}},
		{ioc.IP, "192.0.2.11", nil},
		{ioc.IP, "198.51.100.7", []string{"a:198.51.100.0/24", "b:198.51.100.0/25"}},
		{ioc.IP, "198.51.100.200", []string{"a:198.51.100.0/24"}},
		{ioc.IP, "198.51.101.7", nil},
		{ioc.IP, "2001:db8:1::5", []string{"a:2001:db8::/32"}},
		{ioc.IP, "2001:db9::5", nil},
		{ioc.Domain, "example.org", []string{"a:example.org"}},
		{ioc.Domain, "mail.corp.example.org", []string{"a:example.org"}},
		{ioc.Domain, "badexample.org", nil},
		{ioc.Domain, "example.org.evil.test", nil},
		{ioc.URL, "https://login.example.org/reset?x=1", []string{"a:example.org"}},
		{ioc.URL, "https://example.com/example.org", nil},
		{ioc.URL, "http://192.0.2.10:8080/payload.exe", []string{"a:192.0.2.10"}},
		{ioc.URL, "http://user@203.0.113.5/x", []string{"b:203.0.113.5"}},
		{ioc.URL, "http://[2001:db8::1]/x", []string{"a:2001:db8::/32"}},
		{ioc.URL, "https://portal.example.net/app/login", []string{"b:https://portal.example.net/app"}},
		{ioc.URL, "https://portal.example.net/application", []string{"b:https://portal.example.net/app"}},
		{ioc.URL, "https://portal.example.net/other", nil},
		{ioc.URL, "http://portal.example.net/app/login", nil},
		{ioc.SHA256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", nil},
	}
	for _, c := range cases {
		var got []string
		x.Each(c.kind, c.value, func(id int64) bool {
			a := byID[id]
			kind, value, _ := allowlist.ParseEntry(a.raw)
			if !Covers(kind, value, c.kind, c.value) {
				t.Errorf("%s %s: the index finds %s, which Covers refuses", c.kind, c.value, value)
			}
			got = append(got, a.tenant+":"+value)
			return true
		})
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s: hits %v, want %v", c.kind, c.value, got, c.want)
		}
		if x.Covers(c.kind, c.value) != (len(c.want) > 0) {
			t.Errorf("%s %s: Covers disagrees", c.kind, c.value)
		}
		// The exact check agrees with the index, asset by asset.
		for _, a := range assets {
			kind, value, _ := allowlist.ParseEntry(a.raw)
			if Covers(kind, value, c.kind, c.value) != slices.Contains(c.want, a.tenant+":"+value) {
				t.Errorf("%s %s: Covers(%s) disagrees with the index", c.kind, c.value, value)
			}
		}
	}
	var empty *Index
	if empty.Covers(ioc.IP, "192.0.2.10") {
		t.Error("an empty index covers something")
	}
}
