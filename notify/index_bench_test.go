package notify

import (
	"fmt"
	"testing"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/ioc"
)

// BenchmarkIndexCovers is the question the runner asks of every indicator,
// against 10,000 tenants × 100 assets shaped like cmd/tifeeds-bench's.
func BenchmarkIndexCovers(b *testing.B) {
	bl := NewIndexBuilder()
	for i := range 1_000_000 {
		var raw string
		switch j := i % 100; {
		case j%10 < 4:
			raw = fmt.Sprintf("12.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		case j%10 < 6:
			raw = fmt.Sprintf("13.%d.%d.0/24", i>>16&255, i>>8&255)
		case j%10 < 9:
			raw = fmt.Sprintf("tenant-%d-%d.example.com", i/100, j)
		default:
			raw = fmt.Sprintf("http://site-%d.example.org/t%d/", i%10007, i/100)
		}
		kind, value, err := allowlist.ParseEntry(raw)
		if err != nil {
			b.Fatal(err)
		}
		bl.Add(int64(i+1), kind, value)
	}
	x := bl.Build()
	for _, c := range []struct {
		name  string
		kind  ioc.Kind
		value string
	}{
		{"ip", ioc.IP, "11.3.4.5"},
		{"domain", ioc.Domain, "host-123456.example.com"},
		{"url", ioc.URL, "http://site-77.example.org/path/123?id=123"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if x.Covers(c.kind, c.value) {
					b.Fatal("covered")
				}
			}
		})
	}
}
