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
	userIPs    *prefixSet
	userNames  *domainSet
	userURLs   *urlSet
	users      int
}

// NewSet returns the built-in lists with the user entries; entries must
// hold values as ParseEntry returns them.
func NewSet(entries []Entry) *Set {
	b := builtin()
	s := &Set{builtinIPs: b.ips, topSites: b.topSites,
		userIPs: newPrefixSet(), userNames: newDomainSet(true), userURLs: newURLSet(), users: len(entries)}
	for _, e := range entries {
		m := Match{List: ListUser, Entry: e.Value, ID: e.ID, Comment: e.Comment}
		switch e.Kind {
		case EntryIP, EntryCIDR:
			if p, err := parsePrefix(e.Value); err == nil {
				s.userIPs.add(p, m)
			}
		case EntryDomain:
			s.userNames.add(e.Value, m)
		case EntryURL:
			s.userURLs.add(e.Value, m)
		}
	}
	return s
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
		return s.userIPs.lookup(a)
	case ioc.Domain:
		if m, ok := s.topSites.lookup(strings.TrimPrefix(value, "www.")); ok {
			return m, true
		}
		return s.userNames.lookup(value)
	case ioc.URL:
		return s.userURLs.lookup(value)
	}
	return Match{}, false
}

// UserEntries is how many user entries the set was built with.
func (s *Set) UserEntries() int { return s.users }

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
