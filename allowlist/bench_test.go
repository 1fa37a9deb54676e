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
