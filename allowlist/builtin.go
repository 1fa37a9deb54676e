package allowlist

import (
	"bufio"
	"embed"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/tifeeds/tifeeds/ioc"
)

// The built-in lists: one entry a line, "#" starts a comment. Each file's
// header names its source and date (see README.md, "Allowlists").
//
//go:embed lists/*.txt
var lists embed.FS

type builtinLists struct {
	ips      *prefixSet
	topSites *domainSet
}

// builtin parses the embedded lists once; a bad line is a bug of the
// repository, caught by the tests, so it panics.
var builtin = sync.OnceValue(func() builtinLists {
	b := builtinLists{ips: newPrefixSet(), topSites: newDomainSet(false)}
	for _, l := range []struct{ list, file string }{
		{ListReserved, "lists/reserved.txt"}, {ListPublicDNS, "lists/public-dns.txt"},
	} {
		for _, v := range readList(l.file) {
			p, err := parsePrefix(v)
			if err != nil {
				panic(fmt.Sprintf("allowlist: %s: %q is not an address or a range", l.file, v))
			}
			b.ips.add(p, Match{List: l.list, Entry: entryText(p)})
		}
	}
	for i, v := range readList("lists/top-sites.txt") {
		d, err := ioc.Normalize(ioc.Domain, v)
		if err != nil {
			panic(fmt.Sprintf("allowlist: lists/top-sites.txt line %d: %v", i+1, err))
		}
		d = strings.TrimPrefix(d, "www.")
		b.topSites.add(d, Match{List: ListTopSites, Entry: d})
	}
	return b
})

// BuiltinSizes returns how many entries each built-in list holds.
func BuiltinSizes() map[string]int {
	b := builtin()
	n := map[string]int{ListTopSites: b.topSites.len()}
	for _, m := range b.ips.v4 {
		n[m.List]++
	}
	for _, m := range b.ips.v6 {
		n[m.List]++
	}
	return n
}

func readList(name string) []string {
	f, err := lists.Open(name)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		panic(err)
	}
	return out
}

// entryText shows a one-address prefix as the address.
func entryText(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.Masked().String()
}
