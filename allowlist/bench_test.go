package allowlist_test

import (
	"fmt"
	"testing"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/ioc"
)

// BenchmarkMatch measures one lookup of each kind against the built-in
// lists and 10,000 user entries (make bench measures the ingestion).
func BenchmarkMatch(b *testing.B) {
	var entries []allowlist.Entry
	for i := range 10000 {
		raw := [...]string{fmt.Sprintf("12.0.%d.%d", i>>8&255, i&255), fmt.Sprintf("13.%d.%d.0/24", i>>8&255, i&255),
			fmt.Sprintf("corp-%d.example.com", i), fmt.Sprintf("http://site-%d.example.org/safe/", i)}[i%4]
		k, v, err := allowlist.ParseEntry(raw)
		if err != nil {
			b.Fatal(err)
		}
		entries = append(entries, allowlist.Entry{ID: int64(i), Kind: k, Value: v})
	}
	s := allowlist.NewSet(entries)
	for _, tc := range []struct {
		kind  ioc.Kind
		value string
	}{{ioc.IP, "11.2.3.4"}, {ioc.Domain, "host-123.example.com"}, {ioc.URL, "http://site-12.example.org/path/1?id=1"}} {
		b.Run(string(tc.kind), func(b *testing.B) {
			for b.Loop() {
				s.Match(tc.kind, tc.value)
			}
		})
	}
}

// onePrefixPerPage returns n URL prefixes of one site, as an operator who
// allowlists a site page by page would add them.
func onePrefixPerPage(b *testing.B, n int) []allowlist.Entry {
	b.Helper()
	entries := make([]allowlist.Entry, n)
	for i := range entries {
		k, v, err := allowlist.ParseEntry(fmt.Sprintf("https://intranet.example.org/docs/%d/page-%d", i%97, i))
		if err != nil {
			b.Fatal(err)
		}
		entries[i] = allowlist.Entry{ID: int64(i + 1), Kind: k, Value: v}
	}
	return entries
}

// BenchmarkURLPrefixesBuild builds the set of 100,000 URL prefixes of one
// site, as every change of the allowlist does.
func BenchmarkURLPrefixesBuild(b *testing.B) {
	entries := onePrefixPerPage(b, 100000)
	for b.Loop() {
		allowlist.NewSet(entries)
	}
}

// BenchmarkURLPrefixesMatch looks up URLs of a site with 30,000 prefixes:
// one covered by the last prefix added, and one covered by none.
func BenchmarkURLPrefixesMatch(b *testing.B) {
	s := allowlist.NewSet(onePrefixPerPage(b, 30000))
	for name, u := range map[string]string{
		"covered":     "https://intranet.example.org/docs/28/page-29999/section?x=1",
		"not covered": "https://intranet.example.org/docs/28/other",
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s.Match(ioc.URL, u)
			}
		})
	}
}
