package allowlist

import "strings"

// domainSet holds domain entries. An entry covers the name itself and, when
// subtree is set, every name below it: a lookup walks the name from the
// right, probing each parent ("a.b.example.org", "b.example.org",
// "example.org", "org") in one map, so its cost grows with the labels of
// the name, not with the entries.
type domainSet struct {
	names   map[string]Match
	subtree bool
}

func newDomainSet(subtree bool) *domainSet {
	return &domainSet{names: map[string]Match{}, subtree: subtree}
}

func (s *domainSet) add(name string, m Match) {
	if _, ok := s.names[name]; !ok {
		s.names[name] = m
	}
}

func (s *domainSet) lookup(name string) (Match, bool) {
	if m, ok := s.names[name]; ok {
		return m, true
	}
	if !s.subtree {
		return Match{}, false
	}
	for {
		i := strings.IndexByte(name, '.')
		if i < 0 {
			return Match{}, false
		}
		name = name[i+1:]
		if m, ok := s.names[name]; ok {
			return m, true
		}
	}
}

func (s *domainSet) len() int { return len(s.names) }
