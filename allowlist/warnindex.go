package allowlist

import (
	"hash/maphash"
	"math/bits"
	"net/netip"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/tifeeds/tifeeds/ioc"
)

// Index holds the entries of several warninglists in one set of
// structures, so that a lookup costs the same whatever the number of
// lists: a probe per prefix length in use (addresses), per label (names),
// one for exact values; only substring and regex lists are walked, and
// only those of the kind looked up. An entry names the lists that hold it
// (lists32). Read-only once built; actions are not part of it, so a change
// of action needs no rebuild.
type Index struct {
	lists  []*Warninglist
	groups groups
	ip4    table
	ip6    map[Key6]lists32
	lens4  v4Lengths
	lens6  []int
	// Names and values are keyed by a 64-bit hash (keyOf), not the text:
	// tables without pointers cost the collector nothing to scan and a
	// fraction of the memory (1,000,000 entries of one's own). The text a
	// warning shows is the value or the parent probed, never read back. Two
	// texts share a key with a probability of about 2^-64 per pair.
	names table // a name and the names below it
	below table // the names below a name only
	exact table
	subs  []listScan // substring lists
	res   []listScan // regex lists
	gen   uint64     // distinguishes one build from another
}

var indexGen atomic.Uint64

type listScan struct {
	id      uint16
	entries []wentry
	res     []*regexp.Regexp // a regex list's, by entry
}

// NewIndex indexes lists; their ids are their positions.
func NewIndex(lists []*Parsed) *Index {
	// Sized up front: a slice grown by doubling leaves its old arrays to
	// the collector, as much again as it holds (a million own entries).
	var n [entryRegex + 1]int
	for _, p := range lists {
		for _, e := range p.entries {
			n[e.typ]++
		}
	}
	x := &Index{gen: indexGen.Add(1), ip6: map[Key6]lists32{}}
	ip4, names := newTableBuilder(n[entryPrefix]), newTableBuilder(n[entryName])
	below, exact := newTableBuilder(n[entryBelow]), newTableBuilder(n[entryExact])
	for i, p := range lists {
		id := uint16(i)
		l := p.List
		if l.Kinds == nil {
			l.Kinds = l.kinds.list()
		}
		x.lists = append(x.lists, l)
		var subs, res []wentry
		for _, e := range p.entries {
			switch e.typ {
			case entryPrefix:
				if pr, err := parsePrefix(e.value); err == nil {
					x.addPrefix(ip4, pr, id)
				}
			case entryName:
				if l.exactNames {
					exact.add(keyOf(strings.TrimPrefix(e.value, "www.")), id)
				} else {
					names.add(keyOf(e.value), id)
				}
			case entryBelow:
				below.add(keyOf(e.value[1:]), id)
			case entryExact:
				exact.add(keyOf(e.value), id)
			case entrySubstring:
				subs = append(subs, e)
			case entryRegex:
				res = append(res, e)
			}
		}
		if subs != nil {
			x.subs = append(x.subs, listScan{id: id, entries: subs})
		}
		if res != nil {
			scan := listScan{id: id, entries: res}
			for _, e := range res {
				re, err := compileRegex(e.value) // compiled once already: it parses
				if err != nil {
					panic(err)
				}
				scan.res = append(scan.res, re)
			}
			x.res = append(x.res, scan)
		}
	}
	x.ip4, x.names = ip4.build(&x.groups), names.build(&x.groups)
	x.below, x.exact = below.build(&x.groups), exact.build(&x.groups)
	return x
}

// keySeed is this process's: keys live in memory only.
var keySeed = maphash.MakeSeed()

func keyOf(s string) uint64 { return maphash.String(keySeed, s) }

func (x *Index) addPrefix(ip4 *tableBuilder, p netip.Prefix, id uint16) {
	a, bits := p.Addr(), p.Bits()
	if a.Is4() {
		ip4.add(KeyOf4(a, bits), id)
		x.lens4.add(a, bits)
		return
	}
	k := KeyOf6(a, bits)
	cur, ok := x.ip6[k]
	x.ip6[k] = x.groups.add(cur, ok, id)
	if !containsInt(x.lens6, bits) {
		x.lens6 = append(x.lens6, bits)
		sortDesc(x.lens6)
	}
}

// v4Lengths says which prefix lengths an IPv4 address needs probing at.
// The built-in lists alone use 26 lengths, and a probe of the table is a
// cache miss or two, so most addresses would pay 26 for nothing: a length
// of 16 or more is probed only where a prefix of that length lies within
// the address's /16, and one of 8 to 15 within its /8 (256 KiB and
// 512 bytes of masks). Lengths below 8 are probed for every address.
type v4Lengths struct {
	in16  []uint32 // by /16: bit b-16 for length b ≥ 16 (nil until one is added)
	in8   [256]uint16
	short []int // below 8, longest first
}

func (l *v4Lengths) add(a netip.Addr, bits int) {
	b := a.As4()
	switch {
	case bits >= 16:
		if l.in16 == nil {
			l.in16 = make([]uint32, 1<<16)
		}
		l.in16[int(b[0])<<8|int(b[1])] |= 1 << (bits - 16)
	case bits >= 8:
		l.in8[b[0]] |= 1 << (bits - 8)
	case !containsInt(l.short, bits):
		l.short = append(l.short, bits)
		sortDesc(l.short)
	}
}

// each calls fn with the lengths to probe for a, longest first, until it
// returns false; it reports whether it went through them all.
func (l *v4Lengths) each(a netip.Addr, fn func(bits int) bool) bool {
	b := a.As4()
	if l.in16 != nil {
		for m := l.in16[int(b[0])<<8|int(b[1])]; m != 0; {
			top := bits.Len32(m) - 1
			if !fn(16 + top) {
				return false
			}
			m &^= 1 << top
		}
	}
	for m := l.in8[b[0]]; m != 0; {
		top := bits.Len16(m) - 1
		if !fn(8 + top) {
			return false
		}
		m &^= 1 << top
	}
	for _, n := range l.short {
		if !fn(n) {
			return false
		}
	}
	return true
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func sortDesc(s []int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] > s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// Lists returns the lists of the index, by id.
func (x *Index) Lists() []*Warninglist { return x.lists }

// hit is called for each list holding an entry that matches; it returns
// false to stop.
type hit func(id uint16, entry string) bool

// each calls fn for every (list, entry) matching the normalised value of
// kind, among the lists for which use is true, most specific entries
// first; it reports false when fn stopped it.
func (x *Index) each(kind ioc.Kind, value string, use func(id uint16) bool, fn hit) bool {
	applies := func(k ioc.Kind, hosts bool) func(id uint16) bool {
		return func(id uint16) bool {
			l := x.lists[id]
			if hosts {
				return l.urlHosts && use(id)
			}
			return l.kinds.has(k) && use(id)
		}
	}
	direct := applies(kind, false)
	probe := func(m *table, key, shown string, ok func(uint16) bool) bool {
		v, found := m.get(keyOf(key))
		if !found {
			return true
		}
		return x.groups.each(v, func(id uint16) bool { return !ok(id) || fn(id, shown) })
	}
	switch kind {
	case ioc.IP:
		a, err := netip.ParseAddr(value)
		if err != nil {
			return true
		}
		if !x.eachPrefix(a.Unmap(), direct, fn) {
			return false
		}
		if !probe(&x.exact, value, value, direct) {
			return false
		}
	case ioc.Domain:
		if !x.eachName(value, direct, fn) {
			return false
		}
	case ioc.URL:
		if !probe(&x.exact, value, value, direct) {
			return false
		}
		if host, ok := urlHost(value); ok {
			if !x.eachName(host, applies(kind, true), fn) {
				return false
			}
		}
	default:
		if !probe(&x.exact, value, value, direct) {
			return false
		}
	}
	if len(x.subs) == 0 && len(x.res) == 0 {
		return true
	}
	lower := ""
	for _, s := range x.subs {
		if !direct(s.id) {
			continue
		}
		if lower == "" {
			lower = strings.ToLower(value)
		}
		for _, e := range s.entries {
			if strings.Contains(lower, e.value) {
				if !fn(s.id, e.value) {
					return false
				}
				break
			}
		}
	}
	for _, r := range x.res {
		if !direct(r.id) {
			continue
		}
		for i, e := range r.entries {
			if r.res[i].MatchString(value) {
				if !fn(r.id, e.value) {
					return false
				}
				break
			}
		}
	}
	return true
}

func (x *Index) eachPrefix(a netip.Addr, ok func(uint16) bool, fn hit) bool {
	visit := func(v lists32, bits int) bool {
		shown := ""
		return x.groups.each(v, func(id uint16) bool {
			if !ok(id) {
				return true
			}
			if shown == "" {
				shown = entryText(netip.PrefixFrom(a, bits).Masked())
			}
			return fn(id, shown)
		})
	}
	if a.Is4() {
		return x.lens4.each(a, func(bits int) bool {
			v, found := x.ip4.get(KeyOf4(a, bits))
			return !found || visit(v, bits)
		})
	}
	for _, bits := range x.lens6 {
		if v, found := x.ip6[KeyOf6(a, bits)]; found && !visit(v, bits) {
			return false
		}
	}
	return true
}

// eachName visits the entries covering a host name: exact entries of the
// name (or its www. form), entries of the name and of each parent, and
// below-only entries of each parent.
func (x *Index) eachName(name string, ok func(uint16) bool, fn hit) bool {
	visit := func(m *table, key, shown string) bool {
		v, found := m.get(keyOf(key))
		if !found {
			return true
		}
		return x.groups.each(v, func(id uint16) bool { return !ok(id) || fn(id, shown) })
	}
	if !visit(&x.exact, strings.TrimPrefix(name, "www."), strings.TrimPrefix(name, "www.")) {
		return false
	}
	if !visit(&x.names, name, name) {
		return false
	}
	for {
		i := strings.IndexByte(name, '.')
		if i < 0 {
			return true
		}
		name = name[i+1:]
		if !visit(&x.names, name, name) || !visit(&x.below, name, "."+name) {
			return false
		}
	}
}

// urlHost returns the host name of a normalised URL; false for an address.
func urlHost(u string) (string, bool) {
	o, ok := origin(u)
	if !ok {
		return "", false
	}
	h := o[strings.Index(o, "://")+3:]
	if at := strings.LastIndexByte(h, '@'); at >= 0 {
		h = h[at+1:]
	}
	if strings.HasPrefix(h, "[") {
		return "", false
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	if _, err := netip.ParseAddr(h); err == nil || h == "" {
		return "", false
	}
	return h, true
}
