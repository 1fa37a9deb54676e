package allowlist

import (
	"cmp"
	"slices"
	"strings"
)

// urlSet holds URL prefixes, indexed by their scheme and authority
// ("https://example.org:8443"): a lookup probes the map once with the
// URL's own and searches only the prefixes of that host.
//
// A site may have a hundred thousand prefixes, so neither building nor a
// lookup compares them one by one. The prefixes of a site are sorted; the
// greatest one not above a URL shares with the URL every prefix of the set
// that covers it (see sitePrefixes.lookup), and each prefix keeps a link to
// the longest other prefix of the set that starts it, so the covering ones
// are found by following links from there. A lookup costs a binary search
// and at most one step per distinct prefix length, whatever the number of
// prefixes.
type urlSet struct {
	byOrigin map[string]*sitePrefixes
}

// sitePrefixes are the prefixes of one scheme and authority, sorted, without
// repeats.
type sitePrefixes struct {
	prefixes []sitePrefix
	matches  []Match // all the set's, in the order added
}

type sitePrefix struct {
	entry string
	// parent is the index of the longest other prefix that is a prefix of
	// this one, or -1.
	parent int
	// first is the index of the prefix added first among this one and its
	// parents: the entry a match reports, as a scan of the entries in the
	// order added would.
	first int
	added int // the order in which the prefix was added: its index in matches
}

// origin returns the scheme and authority of a normalised URL: everything
// before the first "/" after "://".
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

// newURLSet takes normalised prefixes that have a path, so that none can
// match a longer host name ("https://example.org/" never matches
// "https://example.org.evil.test/"); of a prefix given twice, the first
// counts.
func newURLSet(matches []Match) *urlSet {
	bySite := map[string][]sitePrefix{}
	for i, m := range matches {
		o, ok := origin(m.Entry)
		if !ok {
			continue
		}
		bySite[o] = append(bySite[o], sitePrefix{entry: m.Entry, added: i})
	}
	s := &urlSet{byOrigin: make(map[string]*sitePrefixes, len(bySite))}
	for o, ps := range bySite {
		s.byOrigin[o] = newSitePrefixes(ps, matches)
	}
	return s
}

func newSitePrefixes(ps []sitePrefix, matches []Match) *sitePrefixes {
	slices.SortFunc(ps, func(a, b sitePrefix) int {
		return cmp.Or(strings.Compare(a.entry, b.entry), cmp.Compare(a.added, b.added))
	})
	ps = slices.CompactFunc(ps, func(a, b sitePrefix) bool { return a.entry == b.entry })
	// In sorted order every prefix of an entry comes before it, and the
	// entries between the two start with that prefix too, so the stack of
	// the previous entry's parents still holds it.
	var stack []int
	for i := range ps {
		for len(stack) > 0 && !strings.HasPrefix(ps[i].entry, ps[stack[len(stack)-1]].entry) {
			stack = stack[:len(stack)-1]
		}
		ps[i].parent, ps[i].first = -1, i
		if len(stack) > 0 {
			p := stack[len(stack)-1]
			ps[i].parent = p
			if ps[ps[p].first].added < ps[i].added {
				ps[i].first = ps[p].first
			}
		}
		stack = append(stack, i)
	}
	return &sitePrefixes{prefixes: ps, matches: matches}
}

func (s *urlSet) lookup(u string) (Match, bool) {
	o, ok := origin(u)
	if !ok {
		return Match{}, false
	}
	site := s.byOrigin[o]
	if site == nil {
		return Match{}, false
	}
	return site.lookup(u)
}

// lookup finds the greatest prefix p not above u. Every prefix q of the set
// that u starts with is at most p, and so p starts with q too (the strings
// between q and u all start with q): the prefixes covering u are p's
// parents (p included) no longer than what p and u have in common.
func (s *sitePrefixes) lookup(u string) (Match, bool) {
	i, found := slices.BinarySearchFunc(s.prefixes, u, func(p sitePrefix, u string) int {
		return strings.Compare(p.entry, u)
	})
	if !found {
		i--
	}
	if i < 0 {
		return Match{}, false
	}
	common := commonPrefixLen(s.prefixes[i].entry, u)
	for i >= 0 && len(s.prefixes[i].entry) > common {
		i = s.prefixes[i].parent
	}
	if i < 0 {
		return Match{}, false
	}
	return s.matches[s.prefixes[s.prefixes[i].first].added], true
}

func commonPrefixLen(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
