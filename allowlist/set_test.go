package allowlist_test

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/ioc"
)

func TestBuiltinListsMatchWithListAndEntry(t *testing.T) {
	s := allowlist.NewSet(nil)
	for _, tc := range []struct {
		kind   ioc.Kind
		value  string
		reason string // "" when not allowlisted
	}{
		{ioc.IP, "8.8.8.8", "allowlisted: public-dns 8.8.8.8"},
		{ioc.IP, "2606:4700:4700::1111", "allowlisted: public-dns 2606:4700:4700::1111"},
		{ioc.IP, "10.1.2.3", "allowlisted: reserved 10.0.0.0/8"},
		{ioc.IP, "0.0.0.0", "allowlisted: reserved 0.0.0.0/8"},
		{ioc.IP, "127.0.0.1", "allowlisted: reserved 127.0.0.0/8"},
		{ioc.IP, "::1", "allowlisted: reserved ::1"},
		{ioc.IP, "fe80::1", "allowlisted: reserved fe80::/10"},
		{ioc.IP, "fd12:3456::1", "allowlisted: reserved fc00::/7"},
		{ioc.IP, "239.1.2.3", "allowlisted: multicast 239.0.0.0/8"},
		{ioc.Domain, "youtube.com", "allowlisted: cisco_top20k youtube.com"},
		{ioc.Domain, "www.youtube.com", "allowlisted: cisco_top20k youtube.com"},
		{ioc.Domain, "google.com", "allowlisted: cisco_top20k google.com"},
		// Documentation ranges and example.* stay usable.
		{ioc.IP, "192.0.2.1", ""},
		{ioc.IP, "198.51.100.7", ""},
		{ioc.IP, "203.0.113.9", ""},
		{ioc.IP, "2001:db8::1", ""},
		{ioc.Domain, "example.com", ""},
		{ioc.IP, "8.8.8.9", ""},
		// Subdomains of popular platforms and URLs on them are real IoCs.
		{ioc.Domain, "evil.youtube.com", ""},
		{ioc.URL, "https://docs.google.com/forms/d/x", ""},
		// The MD5 of an empty file.
		{ioc.MD5, "d41d8cd98f00b204e9800998ecf8427e", "allowlisted: common-ioc-false-positive d41d8cd98f00b204e9800998ecf8427e"},
		{ioc.MD5, "d41d8cd98f00b204e9800998ecf84270", ""},
	} {
		m, ok := s.Match(tc.kind, tc.value)
		got := ""
		if ok {
			got = m.Reason()
		}
		if got != tc.reason {
			t.Errorf("Match(%s, %s) = %q, want %q", tc.kind, tc.value, got, tc.reason)
		}
	}
}

func TestBuiltinListSizes(t *testing.T) {
	n := allowlist.BuiltinSizes()
	if n[allowlist.ListReserved] < 14 || n[allowlist.ListPublicDNS] < 35 || n["tranco10k"] < 9990 ||
		n["cisco_top20k"] < 19990 || n["cloudflare-top100k"] < 99990 || n["public-dns-v4"] < 60000 {
		t.Errorf("built-in lists too small: %v", n)
	}
}

func TestUserEntriesMatchEachKind(t *testing.T) {
	var entries []allowlist.Entry
	for i, raw := range []string{"192.0.2.10", "2001:DB8::5", "198.51.100.0/24", "2001:db8:1::/48",
		"Example.ORG", "https://Example.NET/safe/", "ftp://files.example.com"} {
		k, v, err := allowlist.ParseEntry(raw)
		if err != nil {
			t.Fatalf("ParseEntry(%q): %v", raw, err)
		}
		entries = append(entries, allowlist.Entry{ID: int64(i + 1), Kind: k, Value: v, Comment: "c" + raw})
	}
	s := allowlist.NewSet(entries)
	for _, tc := range []struct {
		kind  ioc.Kind
		value string
		entry string
	}{
		{ioc.IP, "192.0.2.10", "192.0.2.10"},
		{ioc.IP, "192.0.2.11", ""},
		{ioc.IP, "2001:db8::5", "2001:db8::5"},
		{ioc.IP, "198.51.100.200", "198.51.100.0/24"},
		{ioc.IP, "2001:db8:1:ffff::1", "2001:db8:1::/48"},
		{ioc.IP, "2001:db8:2::1", ""},
		{ioc.Domain, "example.org", "example.org"},
		{ioc.Domain, "a.b.example.org", "example.org"},
		{ioc.Domain, "badexample.org", ""},
		{ioc.Domain, "example.org.evil.test", ""},
		{ioc.URL, "https://example.net/safe/page?q=1", "https://example.net/safe/"},
		{ioc.URL, "https://example.net/other", ""},
		{ioc.URL, "http://example.net/safe/page", ""},
		{ioc.URL, "ftp://files.example.com/pub/x", "ftp://files.example.com/"},
		{ioc.URL, "ftp://files.example.com.evil.test/x", ""},
		// Domain entries cover domains; URLs need a URL prefix.
		{ioc.URL, "https://example.org/", ""},
	} {
		m, ok := s.Match(tc.kind, tc.value)
		if got := map[bool]string{true: m.Entry}[ok]; got != tc.entry {
			t.Errorf("Match(%s, %s) entry = %q, want %q", tc.kind, tc.value, got, tc.entry)
			continue
		}
		if ok && (m.List != allowlist.ListUser || m.ID == 0 || m.Comment == "") {
			t.Errorf("Match(%s, %s) = %+v, want a user entry with its id and comment", tc.kind, tc.value, m)
		}
	}
}

func TestParseEntry(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		kind  allowlist.EntryKind
		value string
	}{
		{" 192.0.2.1 ", allowlist.EntryIP, "192.0.2.1"},
		{"::ffff:192.0.2.1", allowlist.EntryIP, "192.0.2.1"},
		{"192.0.2.7/32", allowlist.EntryIP, "192.0.2.7"},
		{"192.0.2.7/24", allowlist.EntryCIDR, "192.0.2.0/24"},
		{"2001:db8::/32", allowlist.EntryCIDR, "2001:db8::/32"},
		{"Sub.Example.org.", allowlist.EntryDomain, "sub.example.org"},
		{"HTTPS://Example.org", allowlist.EntryURL, "https://example.org/"},
		{"https://example.org:443/a", allowlist.EntryURL, "https://example.org/a"},
	} {
		k, v, err := allowlist.ParseEntry(tc.raw)
		if err != nil || k != tc.kind || v != tc.value {
			t.Errorf("ParseEntry(%q) = %s, %q, %v; want %s, %q", tc.raw, k, v, err, tc.kind, tc.value)
		}
	}
	for _, raw := range []string{"", "  ", "10.0.0.0/4", "::/8", "not a value", "com", "1.2.3.4/33", "http://", "fe80::1%eth0"} {
		if _, _, err := allowlist.ParseEntry(raw); !errors.Is(err, allowlist.ErrInvalidEntry) {
			t.Errorf("ParseEntry(%q) error = %v, want ErrInvalidEntry", raw, err)
		}
	}
}

// TestURLPrefixesMatchAsPlainPrefixes: a URL is covered by the URL prefixes
// that are plain string prefixes of it (not whole path segments: "/safe"
// covers "/safe-2"), on its own scheme and authority, and the match names
// the first entry added among those covering it, as a scan of the entries
// in order would. Checked against that scan over nested, overlapping and
// repeated prefixes of a few sites.
func TestURLPrefixesMatchAsPlainPrefixes(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	sites := []string{"https://a.example/", "http://a.example/", "https://a.example:8443/", "https://a.example.evil/", "https://b.example/"}
	path := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString([]string{"a", "b", "/", "ab", "a/", "?", "="}[rnd.IntN(7)])
		}
		return b.String()
	}
	var entries []allowlist.Entry
	for i := range 400 {
		v := sites[rnd.IntN(len(sites))] + path(2+rnd.IntN(4))
		if i%50 == 7 {
			v = entries[rnd.IntN(len(entries))].Value // the same prefix again
		}
		entries = append(entries, allowlist.Entry{ID: int64(i + 1), Kind: allowlist.EntryURL, Value: v, Comment: "c"})
	}
	s := allowlist.NewSet(entries)
	covered := 0
	for range 5000 {
		u := sites[rnd.IntN(len(sites))] + path(rnd.IntN(9))
		want := ""
		for _, e := range entries {
			if strings.HasPrefix(u, e.Value) {
				want = e.Value + "#" + strconv.FormatInt(e.ID, 10)
				break
			}
		}
		got := ""
		if m, ok := s.Match(ioc.URL, u); ok {
			got = m.Entry + "#" + strconv.FormatInt(m.ID, 10)
			covered++
		}
		if got != want {
			t.Fatalf("Match(%q) = %q, want %q", u, got, want)
		}
	}
	if covered < 500 || covered > 4500 {
		t.Fatalf("%d of 5000 URLs covered: the sample does not test both outcomes", covered)
	}
}
