package allowlist_test

import (
	"fmt"
	"runtime"
	"strings"
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

// ownList1M is an own list of 1,000,000 entries as tifeeds-bench's
// (addresses, /24 ranges, names, SHA-256 hashes).
func ownList1M() []byte {
	var b strings.Builder
	for i := range 1_000_000 {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "12.%d.%d.%d\n", i>>16&255, i>>8&255, i&255)
		case 1:
			fmt.Fprintf(&b, "13.%d.%d.0/24\n", i>>16&255, i>>8&255)
		case 2:
			fmt.Fprintf(&b, "corp-%d.example.com\n", i)
		default:
			fmt.Fprintf(&b, "%064x\n", i)
		}
	}
	return []byte(b.String())
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkOwnListMatch measures lookups in the built-in lists and an own
// list of 1,000,000 entries, hits and misses, and reports the live heap
// the own list's index holds (index-MB).
func BenchmarkOwnListMatch(b *testing.B) {
	p, err := allowlist.Parse("own", ownList1M())
	if err != nil {
		b.Fatal(err)
	}
	p.List.Default = allowlist.Drop
	before := liveHeap()
	x := allowlist.NewIndex([]*allowlist.Parsed{p})
	indexMB := float64(liveHeap()-before) / (1 << 20) // p is live still
	runtime.KeepAlive(p)
	s := allowlist.NewSetWith(nil, x, nil)
	for _, tc := range []struct {
		name  string
		kind  ioc.Kind
		value string
	}{
		{"ip-miss", ioc.IP, "11.2.3.4"}, {"ip-hit", ioc.IP, "12.0.3.4"}, {"range-hit", ioc.IP, "13.0.5.77"},
		{"domain-miss", ioc.Domain, "host-123.example.com"}, {"domain-hit", ioc.Domain, "www.corp-6.example.com"},
		{"sha256-miss", ioc.SHA256, fmt.Sprintf("%064x", 2)}, {"sha256-hit", ioc.SHA256, fmt.Sprintf("%064x", 3)},
		{"url-miss", ioc.URL, "http://site-12.example.org/path/1?id=1"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			_, hit := s.Match(tc.kind, tc.value)
			if hit != strings.HasSuffix(tc.name, "-hit") {
				b.Fatalf("%s %s: match %v", tc.kind, tc.value, hit)
			}
			for b.Loop() {
				s.Match(tc.kind, tc.value)
			}
			b.ReportMetric(indexMB, "index-MB")
		})
	}
	runtime.KeepAlive(x)
}

// BenchmarkOwnListMatchRows looks up 100,000 distinct values of the mix
// tifeeds-bench ingests (names, addresses, URLs, SHA-256 and MD5 hashes)
// in the built-in lists and an own list of 1,000,000 entries: unlike one
// value looked up again and again, it pays the cache misses an ingest run
// pays. ns/op is per value.
func BenchmarkOwnListMatchRows(b *testing.B) {
	p, err := allowlist.Parse("own", ownList1M())
	if err != nil {
		b.Fatal(err)
	}
	p.List.Default = allowlist.Drop
	s := allowlist.NewSetWith(nil, allowlist.NewIndex([]*allowlist.Parsed{p}), nil)
	type row struct {
		kind  ioc.Kind
		value string
	}
	rows := make([]row, 100_000)
	for i := range rows {
		switch i % 5 {
		case 0:
			rows[i] = row{ioc.Domain, fmt.Sprintf("host-%d.example.com", i)}
		case 1:
			rows[i] = row{ioc.IP, fmt.Sprintf("%d.%d.%d.%d", 11+i>>24&127, i>>16&255, i>>8&255, i&255)}
		case 2:
			rows[i] = row{ioc.URL, fmt.Sprintf("http://site-%d.example.org/path/%d?id=%d", i%10007, i, i)}
		case 3:
			rows[i] = row{ioc.SHA256, fmt.Sprintf("%064x", uint64(i)*2654435761)}
		default:
			rows[i] = row{ioc.MD5, fmt.Sprintf("%032x", uint64(i)*40503)}
		}
	}
	for _, kind := range []ioc.Kind{"", ioc.Domain, ioc.IP, ioc.URL, ioc.SHA256} {
		name := string(kind)
		if kind == "" {
			name = "mix"
		}
		b.Run(name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				for _, r := range rows {
					if kind == "" || r.kind == kind {
						s.Match(r.kind, r.value)
						n++
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/value")
		})
	}
}
