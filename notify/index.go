package notify

import (
	"hash/maphash"
	"net/netip"
	"slices"
	"strings"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/ioc"
)

// Index finds the assets an indicator may cover: an IP address inside a
// watched address or range, a domain equal to or below a watched domain, a
// URL whose host is one of those or that starts with a watched URL prefix.
// Like the allowlist's sets (allowlist/ipset.go, domains.go), a lookup
// costs a probe per prefix length in use or per label of the name, never a
// pass over the assets; unlike them it finds every asset covering a value
// (several tenants watch the same range), so each key leads to a chain of
// assets (next). Read-only once built.
//
// The index holds no pointers but the few URL origins': a million assets
// would otherwise be a heap the garbage collector walks on every cycle of
// ingestion. Names and URL prefixes are keyed by a 64-bit hash, so a
// lookup may name an asset that does not cover the value (a collision, or
// never in practice): the caller confirms each with the stored asset
// (allowlist.Entry.Covers) before recording a hit, a rare path.
type Index struct {
	ids  []int64 // asset ids
	next []int32 // the next asset of the same key, or -1

	v4    map[uint64]int32
	v6    map[allowlist.Key6]int32
	lens4 []int // prefix lengths in use, any order
	lens6 []int
	names map[uint64]int32 // by hashOf(domain)
	// urls are the URL prefixes by the hash of their scheme and authority;
	// lens are the lengths of the prefixes of each origin.
	urls map[uint64]*urlPrefixes
}

type urlPrefixes struct {
	lens     []int
	prefixes map[uint64]int32 // by hashOf(prefix)
}

var seed = maphash.MakeSeed()

func hashOf(s string) uint64 { return maphash.String(seed, s) }

// IndexBuilder collects assets for an Index.
type IndexBuilder struct {
	x *Index
}

// NewIndexBuilder returns an empty builder.
func NewIndexBuilder() *IndexBuilder {
	return &IndexBuilder{x: &Index{v4: map[uint64]int32{}, v6: map[allowlist.Key6]int32{}, names: map[uint64]int32{},
		urls: map[uint64]*urlPrefixes{}}}
}

// Add indexes asset id, its kind and value as allowlist.ParseEntry returns
// them.
func (b *IndexBuilder) Add(id int64, kind allowlist.EntryKind, value string) {
	x := b.x
	i := int32(len(x.ids))
	x.ids = append(x.ids, id)
	x.next = append(x.next, -1)
	chain := func(head int32, ok bool) int32 {
		if ok {
			x.next[i] = head
		}
		return i
	}
	switch kind {
	case allowlist.EntryIP, allowlist.EntryCIDR:
		p, err := parsePrefix(value)
		if err != nil {
			return
		}
		a, bits := p.Addr().Unmap(), p.Bits()
		if a.Is4() {
			k := allowlist.KeyOf4(a, bits)
			head, ok := x.v4[k]
			x.v4[k] = chain(head, ok)
			if !slices.Contains(x.lens4, bits) {
				x.lens4 = append(x.lens4, bits)
			}
		} else {
			k := allowlist.KeyOf6(a, bits)
			head, ok := x.v6[k]
			x.v6[k] = chain(head, ok)
			if !slices.Contains(x.lens6, bits) {
				x.lens6 = append(x.lens6, bits)
			}
		}
	case allowlist.EntryDomain:
		k := hashOf(value)
		head, ok := x.names[k]
		x.names[k] = chain(head, ok)
	case allowlist.EntryURL:
		o, ok := origin(value)
		if !ok {
			return
		}
		ko := hashOf(o)
		up := x.urls[ko]
		if up == nil {
			up = &urlPrefixes{prefixes: map[uint64]int32{}}
			x.urls[ko] = up
		}
		k := hashOf(value)
		head, ok := up.prefixes[k]
		up.prefixes[k] = chain(head, ok)
		if !slices.Contains(up.lens, len(value)) {
			up.lens = append(up.lens, len(value))
		}
	}
}

// Build returns the index; the builder is spent.
func (b *IndexBuilder) Build() *Index {
	x := b.x
	b.x = nil
	return x
}

// Len is how many assets the index holds.
func (x *Index) Len() int {
	if x == nil {
		return 0
	}
	return len(x.ids)
}

// Each calls fn with the id of every asset that may cover the normalised
// value of kind (see Index), until fn returns false.
func (x *Index) Each(kind ioc.Kind, value string, fn func(id int64) bool) {
	if x == nil || len(x.ids) == 0 {
		return
	}
	switch kind {
	case ioc.IP:
		x.eachIP(value, fn)
	case ioc.Domain:
		x.eachName(value, fn)
	case ioc.URL:
		o, ok := origin(value)
		if !ok {
			return
		}
		if !x.eachHost(o, fn) {
			return
		}
		if up := x.urls[hashOf(o)]; up != nil {
			for _, n := range up.lens {
				if n <= len(value) {
					if head, ok := up.prefixes[hashOf(value[:n])]; ok && !x.walk(head, fn) {
						return
					}
				}
			}
		}
	}
}

// Covers reports whether any asset covers the value.
func (x *Index) Covers(kind ioc.Kind, value string) bool {
	found := false
	x.Each(kind, value, func(int64) bool { found = true; return false })
	return found
}

func (x *Index) walk(i int32, fn func(int64) bool) bool {
	for ; i >= 0; i = x.next[i] {
		if !fn(x.ids[i]) {
			return false
		}
	}
	return true
}

func (x *Index) eachIP(value string, fn func(int64) bool) bool {
	if len(x.v4) == 0 && len(x.v6) == 0 {
		return true
	}
	a, err := netip.ParseAddr(value)
	if err != nil {
		return true
	}
	a = a.Unmap()
	if a.Is4() {
		for _, bits := range x.lens4 {
			if head, ok := x.v4[allowlist.KeyOf4(a, bits)]; ok && !x.walk(head, fn) {
				return false
			}
		}
		return true
	}
	for _, bits := range x.lens6 {
		if head, ok := x.v6[allowlist.KeyOf6(a, bits)]; ok && !x.walk(head, fn) {
			return false
		}
	}
	return true
}

func (x *Index) eachName(name string, fn func(int64) bool) bool {
	if len(x.names) == 0 {
		return true
	}
	for {
		if head, ok := x.names[hashOf(name)]; ok && !x.walk(head, fn) {
			return false
		}
		i := strings.IndexByte(name, '.')
		if i < 0 {
			return true
		}
		name = name[i+1:]
	}
}

// eachHost matches the host of a URL's origin ("scheme://[user@]host[:port]")
// as an IP address or a domain.
func (x *Index) eachHost(o string, fn func(int64) bool) bool {
	host, ip := hostOf(o)
	switch {
	case host == "":
		return true
	case ip:
		return x.eachIP(host, fn)
	}
	return x.eachName(host, fn)
}

// hostOf returns the host of a URL's origin and whether it is an IP
// address.
func hostOf(o string) (string, bool) {
	host := o[strings.Index(o, "://")+3:]
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if strings.HasPrefix(host, "[") {
		if i := strings.IndexByte(host, ']'); i > 0 {
			return host[1:i], true
		}
		return "", false
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	if host == "" {
		return "", false
	}
	if c := host[len(host)-1]; c >= '0' && c <= '9' {
		if _, err := netip.ParseAddr(host); err == nil {
			return host, true
		}
	}
	return host, false
}

// Covers reports exactly whether the asset of kind and value (as
// allowlist.ParseEntry returns them) covers the normalised indicator
// value of iocKind: what the index finds, without its hashes.
func Covers(kind allowlist.EntryKind, value string, iocKind ioc.Kind, iocValue string) bool {
	var host string
	var hostIP bool
	if iocKind == ioc.URL {
		o, ok := origin(iocValue)
		if !ok {
			return false
		}
		host, hostIP = hostOf(o)
	}
	switch kind {
	case allowlist.EntryIP, allowlist.EntryCIDR:
		p, err := parsePrefix(value)
		if err != nil {
			return false
		}
		addr := iocValue
		switch {
		case iocKind == ioc.URL && hostIP:
			addr = host
		case iocKind != ioc.IP:
			return false
		}
		a, err := netip.ParseAddr(addr)
		return err == nil && p.Contains(a.Unmap())
	case allowlist.EntryDomain:
		name := iocValue
		switch {
		case iocKind == ioc.URL && !hostIP:
			name = host
		case iocKind != ioc.Domain:
			return false
		}
		return name == value || strings.HasSuffix(name, "."+value)
	case allowlist.EntryURL:
		return iocKind == ioc.URL && strings.HasPrefix(iocValue, value)
	}
	return false
}

// origin returns the scheme and authority of a normalised URL.
func origin(u string) (string, bool) {
	i := strings.Index(u, "://")
	if i < 0 {
		return "", false
	}
	rest := u[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		return u[:i+3+j], true
	}
	return u, true
}

func parsePrefix(v string) (netip.Prefix, error) {
	if strings.Contains(v, "/") {
		return netip.ParsePrefix(v)
	}
	a, err := netip.ParseAddr(v)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
