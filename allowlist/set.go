package allowlist

import (
	"net/netip"
	"strings"

	"github.com/tifeeds/tifeeds/ioc"
)

// Set is the built-in lists and a set of user entries, read-only once
// built (safe for concurrent use).
//
// What each list covers:
//   - reserved, public-dns: IP indicators in their ranges or equal to their
//     addresses;
//   - top-sites: domain indicators equal to a listed name or to its "www."
//     form, nothing below them: a subdomain of a popular hosting platform
//     and a URL on a popular site (a phishing form on a document service)
//     are real indicators;
//   - user IP and CIDR entries: IP indicators; user domains: domain
//     indicators equal to them or below them; user URL prefixes: URL
//     indicators that start with them.
type Set struct {
	builtinIPs *prefixSet
	topSites   *domainSet
	user       *userSet
}

// userSet is the user entries alone.
type userSet struct {
	ips   *prefixSet
	names *domainSet
	urls  *urlSet
	n     int
}

// NewSet returns the built-in lists with the user entries; entries must
// hold values as ParseEntry returns them.
func NewSet(entries []Entry) *Set {
	b := builtin()
	return &Set{builtinIPs: b.ips, topSites: b.topSites, user: newUserSet(entries)}
}

func newUserSet(entries []Entry) *userSet {
	u := &userSet{ips: newPrefixSet(), names: newDomainSet(true), n: len(entries)}
	var urls []Match
	for _, e := range entries {
		m := Match{List: ListUser, Entry: e.Value, ID: e.ID, Comment: e.Comment}
		switch e.Kind {
		case EntryIP, EntryCIDR:
			if p, err := parsePrefix(e.Value); err == nil {
				u.ips.add(p, m)
			}
		case EntryDomain:
			u.names.add(e.Value, m)
		case EntryURL:
			urls = append(urls, m)
		}
	}
	u.urls = newURLSet(urls)
	return u
}

// Match reports the entry covering the normalised value of kind, built-in
// lists first.
func (s *Set) Match(kind ioc.Kind, value string) (Match, bool) {
	switch kind {
	case ioc.IP:
		a, err := netip.ParseAddr(value)
		if err != nil {
			return Match{}, false
		}
		if m, ok := s.builtinIPs.lookup(a); ok {
			return m, true
		}
		return s.user.ips.lookup(a)
	case ioc.Domain:
		if m, ok := s.topSites.lookup(strings.TrimPrefix(value, "www.")); ok {
			return m, true
		}
	}
	return s.user.match(kind, value)
}

func (u *userSet) match(kind ioc.Kind, value string) (Match, bool) {
	switch kind {
	case ioc.IP:
		a, err := netip.ParseAddr(value)
		if err != nil {
			return Match{}, false
		}
		return u.ips.lookup(a)
	case ioc.Domain:
		return u.names.lookup(value)
	case ioc.URL:
		return u.urls.lookup(value)
	}
	return Match{}, false
}

// Covers reports whether the user entry e covers the normalised value of
// kind, as it does in a Set.
func (e Entry) Covers(kind ioc.Kind, value string) bool {
	_, ok := newUserSet([]Entry{e}).match(kind, value)
	return ok
}

// IndicatorKind is the kind of indicator an entry of kind k covers.
func (k EntryKind) IndicatorKind() ioc.Kind {
	switch k {
	case EntryDomain:
		return ioc.Domain
	case EntryURL:
		return ioc.URL
	}
	return ioc.IP
}

// StorePattern is a LIKE pattern (ESCAPE '\') that every stored value the
// entry covers matches, to narrow a scan of the store; Covers decides.
func (e Entry) StorePattern() string {
	esc := func(s string) string {
		return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
	}
	switch e.Kind {
	case EntryIP:
		return esc(e.Value)
	case EntryDomain:
		return "%" + esc(e.Value)
	case EntryURL:
		return esc(e.Value) + "%"
	case EntryCIDR:
		p, err := netip.ParsePrefix(e.Value)
		if err != nil || !p.Addr().Is4() {
			return "%:%"
		}
		// The leading whole octets are a text prefix of every address in
		// the range.
		octets := strings.Split(p.Addr().String(), ".")[:p.Bits()/8]
		return strings.Join(octets, ".") + ".%"
	}
	return ""
}

// UserEntries is how many user entries the set was built with.
func (s *Set) UserEntries() int { return s.user.n }

// parsePrefix reads an address or a CIDR range as a prefix.
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
