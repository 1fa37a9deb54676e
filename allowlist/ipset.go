package allowlist

import (
	"net/netip"
	"slices"
)

// prefixSet maps address prefixes to their entries. A lookup masks the
// address once per prefix length in use and probes a map: at most 33 (IPv4)
// or 129 (IPv6) probes whatever the number of entries, and in practice a
// handful, since lists use few lengths.
type prefixSet struct {
	byPrefix map[netip.Prefix]Match
	lens4    []int // prefix lengths in use for IPv4, longest first
	lens6    []int
}

func newPrefixSet() *prefixSet { return &prefixSet{byPrefix: map[netip.Prefix]Match{}} }

// add keeps the first entry for a prefix listed twice.
func (s *prefixSet) add(p netip.Prefix, m Match) {
	p = p.Masked()
	if _, ok := s.byPrefix[p]; ok {
		return
	}
	s.byPrefix[p] = m
	lens := &s.lens6
	if p.Addr().Is4() {
		lens = &s.lens4
	}
	if !slices.Contains(*lens, p.Bits()) {
		*lens = append(*lens, p.Bits())
		// Longest first: the most specific entry is the one reported.
		slices.SortFunc(*lens, func(a, b int) int { return b - a })
	}
}

func (s *prefixSet) lookup(a netip.Addr) (Match, bool) {
	a = a.Unmap()
	lens := s.lens6
	if a.Is4() {
		lens = s.lens4
	}
	for _, bits := range lens {
		p, err := a.Prefix(bits)
		if err != nil {
			continue
		}
		if m, ok := s.byPrefix[p]; ok {
			return m, true
		}
	}
	return Match{}, false
}

func (s *prefixSet) len() int { return len(s.byPrefix) }
