package allowlist

import (
	"encoding/binary"
	"net/netip"
	"slices"
)

// prefixSet maps address prefixes to their entries. A lookup masks the
// address once per prefix length in use and probes a map: at most 33 (IPv4)
// or 129 (IPv6) probes whatever the number of entries, and in practice a
// handful, since lists use few lengths. Keys are plain integers (IPv4: the
// length and the masked address in one uint64), far cheaper to hash than a
// netip.Prefix (make bench, docs/benchmarks.md).
type prefixSet struct {
	v4    map[uint64]Match
	v6    map[Key6]Match
	lens4 []int // prefix lengths in use, longest first
	lens6 []int
}

// Key6 is an IPv6 prefix as a map key (KeyOf6). The asset watch's index
// (notify) keys its ranges the same way.
type Key6 struct {
	hi, lo uint64
	bits   int
}

func newPrefixSet() *prefixSet {
	return &prefixSet{v4: map[uint64]Match{}, v6: map[Key6]Match{}}
}

func mask64(v uint64, bits int) uint64 {
	if bits <= 0 {
		return 0
	}
	if bits >= 64 {
		return v
	}
	return v &^ (1<<(64-bits) - 1)
}

// KeyOf4 is the map key of a's prefix of bits: the length in the top
// byte, the masked address below it.
func KeyOf4(a netip.Addr, bits int) uint64 {
	b := a.As4()
	v := uint64(binary.BigEndian.Uint32(b[:])) << 32
	return uint64(bits)<<56 | mask64(v, bits)>>8
}

// KeyOf6 is the map key of a's prefix of bits.
func KeyOf6(a netip.Addr, bits int) Key6 {
	b := a.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	return Key6{hi: mask64(hi, bits), lo: mask64(lo, bits-64), bits: bits}
}

// add keeps the first entry for a prefix listed twice.
func (s *prefixSet) add(p netip.Prefix, m Match) {
	a, bits := p.Addr().Unmap(), p.Bits()
	if p.Addr().Is4In6() {
		bits -= 96
	}
	lens := &s.lens6
	if a.Is4() {
		lens = &s.lens4
		k := KeyOf4(a, bits)
		if _, ok := s.v4[k]; ok {
			return
		}
		s.v4[k] = m
	} else {
		k := KeyOf6(a, bits)
		if _, ok := s.v6[k]; ok {
			return
		}
		s.v6[k] = m
	}
	if !slices.Contains(*lens, bits) {
		*lens = append(*lens, bits)
		// Longest first: the most specific entry is the one reported.
		slices.SortFunc(*lens, func(a, b int) int { return b - a })
	}
}

func (s *prefixSet) lookup(a netip.Addr) (Match, bool) {
	a = a.Unmap()
	if a.Is4() {
		for _, bits := range s.lens4 {
			if m, ok := s.v4[KeyOf4(a, bits)]; ok {
				return m, true
			}
		}
		return Match{}, false
	}
	for _, bits := range s.lens6 {
		if m, ok := s.v6[KeyOf6(a, bits)]; ok {
			return m, true
		}
	}
	return Match{}, false
}

func (s *prefixSet) len() int { return len(s.v4) + len(s.v6) }
