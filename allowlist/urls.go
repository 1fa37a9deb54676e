package allowlist

import "strings"

// urlSet holds URL prefixes, indexed by their scheme and authority
// ("https://example.org:8443"): a lookup probes the map once with the
// URL's own and compares only the prefixes of that host.
type urlSet struct {
	byOrigin map[string][]Match
	n        int
}

func newURLSet() *urlSet { return &urlSet{byOrigin: map[string][]Match{}} }

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

// add takes a normalised prefix that has a path, so that it cannot match a
// longer host name ("https://example.org/" never matches
// "https://example.org.evil.test/").
func (s *urlSet) add(prefix string, m Match) {
	o, ok := origin(prefix)
	if !ok {
		return
	}
	for _, have := range s.byOrigin[o] {
		if have.Entry == prefix {
			return
		}
	}
	s.byOrigin[o] = append(s.byOrigin[o], m)
	s.n++
}

func (s *urlSet) lookup(u string) (Match, bool) {
	o, ok := origin(u)
	if !ok {
		return Match{}, false
	}
	for _, m := range s.byOrigin[o] {
		if strings.HasPrefix(u, m.Entry) {
			return m, true
		}
	}
	return Match{}, false
}

func (s *urlSet) len() int { return s.n }
