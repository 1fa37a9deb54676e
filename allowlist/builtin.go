package allowlist

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/tifeeds/tifeeds/ioc"
)

// The built-in lists: ours (one entry a line, "#" starts a comment; each
// file's header names its source and date) and MISP's warninglists
// (lists/misp/<name>.json.gz, their list.json gzipped; lists/misp/SOURCE
// and README.md, "Warninglists").
//
//go:embed lists/*.txt lists/misp/*.json.gz
var lists embed.FS

// Categories of the built-in lists, which decide their default action
// (issue 27): top sites, public resolvers, reserved and RFC ranges,
// sinkholes and known-false-positive hashes drop; cloud and CDN ranges,
// scanners, dynamic DNS, URL shorteners and VPNs flag; the rest is off.
var builtinDefaults = map[string]Action{
	// Top sites. Rankings match the names themselves (and their www.
	// form) only: a subdomain of a hosting platform and a URL on a popular
	// site (a phishing form on a document service) are real indicators.
	"tranco10k": Drop, "cisco_top20k": Drop, "cloudflare-top100k": Drop,
	// Public resolvers. public-dns-hostname flags: it names whole zones of
	// hosting customers (about 500 second-level names, example.com and
	// apkbg55.ru among them), which as a drop list would hide every name
	// below them.
	"public-dns-v4": Drop, "public-dns-v6": Drop, "public-dns-hostname": Flag,
	// Reserved ranges. rfc5735, rfc3849 and rfc6761 name the documentation
	// ranges (192.0.2.0/24, 2001:db8::/32) and names (example.com, .test)
	// too, which tests, demos and exercises use as indicators: they flag.
	"rfc1918": Drop, "rfc6598": Drop, "ipv6-linklocal": Drop, "multicast": Drop,
	"rfc5735": Flag, "rfc3849": Flag, "rfc6761": Flag,
	"sinkholes": Drop,
	// Known false positives.
	"empty-hashes": Drop, "common-ioc-false-positive": Drop, "ti-falsepositives": Drop,
	// Cloud and CDN ranges.
	"amazon-aws": Flag, "akamai": Flag, "cloudflare": Flag, "fastly": Flag, "google-gcp": Flag,
	"microsoft-azure": Flag, "oracle-oci": Flag, "github": Flag, "stackpath": Flag, "bunny-net": Flag,
	"zscaler": Flag,
	// VPNs and relays, dynamic DNS, URL shorteners.
	"icloud-private-relay": Flag, "vpn-ipv4": Flag, "vpn-ipv6": Flag, "dynamic-dns": Flag, "url-shortener": Flag,
	// The rest: shipped, off until root turns them on.
	"automated-malware-analysis": Off, "common-contact-emails": Off, "mozilla-CA": Off, "whats-my-ip": Off,
	"eicar.com": Off,
}

// rankings are the site rankings: names match exactly (see builtinDefaults).
var rankings = map[string]bool{"tranco10k": true, "cisco_top20k": true, "cloudflare-top100k": true}

// documentationNames (RFC 2606) are left out of the rankings: tests, demos
// and exercises use them as indicators.
var documentationNames = map[string]bool{"example.com": true, "example.net": true, "example.org": true}

// Our own lists, which stand first: a value on one of them and on a MISP
// list is reported as ours.
var ownBuiltin = []struct{ name, file, description string }{
	{ListReserved, "lists/reserved.txt", "Reserved and private address ranges (IANA special-purpose registries), without the documentation ranges."},
	{ListPublicDNS, "lists/public-dns.txt", "The addresses of the best-known public DNS resolvers, from each provider's documentation."},
}

// isScanner: the research scanners MISP lists (*-scanning, *-scanner) flag.
func isScanner(name string) bool {
	return strings.HasSuffix(name, "-scanning") || strings.HasSuffix(name, "-scanner")
}

// builtin parses the embedded lists once; a bad list is a bug of the
// repository, caught by the tests, so it panics.
var builtin = sync.OnceValue(func() *Index {
	var parsed []*Parsed
	for _, o := range ownBuiltin {
		l := &Warninglist{Name: o.name, Description: o.description, Type: TypeCIDR, Builtin: true, Default: Drop,
			kinds: kindBits[ioc.IP], Version: 20261125}
		p := &Parsed{List: l}
		for _, v := range readList(o.file) {
			pr, err := parsePrefix(v)
			if err != nil {
				panic(fmt.Sprintf("allowlist: %s: %q is not an address or a range", o.file, v))
			}
			pr = pr.Masked()
			p.entries = append(p.entries, wentry{typ: entryPrefix, value: entryText(pr)})
		}
		l.Entries = len(p.entries)
		parsed = append(parsed, p)
	}
	files, err := lists.ReadDir("lists/misp")
	if err != nil {
		panic(err)
	}
	var misp []*Parsed
	for _, f := range files {
		name := strings.TrimSuffix(f.Name(), ".json.gz")
		p, err := ParseMISP(gunzip("lists/misp/"+f.Name()), false)
		if err != nil {
			panic(fmt.Sprintf("allowlist: lists/misp/%s: %v", f.Name(), err))
		}
		l := p.List
		l.Name, l.Builtin = name, true
		d, ok := builtinDefaults[name]
		if !ok && isScanner(name) {
			d, ok = Flag, true
		}
		if !ok {
			panic(fmt.Sprintf("allowlist: lists/misp/%s has no default action in builtinDefaults", f.Name()))
		}
		l.Default = d
		if rankings[name] {
			l.exactNames, l.kinds, l.urlHosts = true, kindBits[ioc.Domain], false
			p.entries = slices.DeleteFunc(p.entries, func(e wentry) bool { return documentationNames[e.value] })
			l.Entries = len(p.entries)
		}
		misp = append(misp, p)
	}
	slices.SortFunc(misp, func(a, b *Parsed) int { return strings.Compare(a.List.Name, b.List.Name) })
	return NewIndex(append(parsed, misp...))
})

func gunzip(name string) []byte {
	f, err := lists.Open(name)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		panic(fmt.Sprintf("allowlist: %s: %v", name, err))
	}
	var b bytes.Buffer
	if _, err := io.Copy(&b, z); err != nil {
		panic(fmt.Sprintf("allowlist: %s: %v", name, err))
	}
	return b.Bytes()
}

// Builtin returns the built-in lists, our two first, then MISP's by name.
func Builtin() []*Warninglist { return builtin().lists }

// BuiltinSizes returns how many entries each built-in list holds.
func BuiltinSizes() map[string]int {
	n := map[string]int{}
	for _, l := range builtin().lists {
		n[l.Name] = l.Entries
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
