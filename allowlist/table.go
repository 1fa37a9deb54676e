package allowlist

import (
	"cmp"
	"math/bits"
	"slices"
)

// table maps 64-bit keys (addresses with their prefix length, hashes of
// names and values) to the lists holding them, in two sorted slices and a
// directory by the keys' top bits: about 14 bytes an entry, against 26 or
// more in a map sized up front, and nothing for the collector to scan. A
// lookup reads the directory and the few keys of one bucket: keys are
// stored mixed (mix, a bijection), so buckets hold about two each whatever
// the keys were. Read-only once built (tableBuilder).
type table struct {
	keys  []uint64  // mixed, ascending
	vals  []lists32 // by key
	dir   []uint32  // dir[b]: the first key whose top bits are b or more
	shift uint
	// seen has the bit of each key's low bits set: about eight bits a
	// key, so a key absent (most lookups: a value in no list) is told in
	// one read of a structure an eighth the size of keys and dir, which
	// stays in cache where they would not, in about 88 lookups of 100.
	seen []uint64
	mask uint64 // of the bit indexes in seen
}

// tableBuilder collects a table's entries; the lists of a key are in the
// order they were added, as a map's groups.add made them.
type tableBuilder struct{ pairs []tablePair }

type tablePair struct {
	k  uint64
	id uint16
}

func newTableBuilder(n int) *tableBuilder { return &tableBuilder{pairs: make([]tablePair, 0, n)} }

func (b *tableBuilder) add(k uint64, id uint16) { b.pairs = append(b.pairs, tablePair{mix(k), id}) }

// build sorts the entries into a table; lists are added by ascending id,
// so ordering a key's entries by id keeps the order they were added in.
func (b *tableBuilder) build(g *groups) table {
	slices.SortFunc(b.pairs, func(x, y tablePair) int {
		if c := cmp.Compare(x.k, y.k); c != 0 {
			return c
		}
		return cmp.Compare(x.id, y.id)
	})
	n := 0
	for i, p := range b.pairs {
		if i == 0 || p.k != b.pairs[i-1].k {
			n++
		}
	}
	t := table{keys: make([]uint64, 0, n), vals: make([]lists32, 0, n)}
	for _, p := range b.pairs {
		if last := len(t.keys) - 1; last >= 0 && t.keys[last] == p.k {
			t.vals[last] = g.add(t.vals[last], true, p.id)
			continue
		}
		t.keys = append(t.keys, p.k)
		t.vals = append(t.vals, g.add(0, false, p.id))
	}
	b.pairs = nil
	// About two keys a bucket.
	dirBits := uint(bits.Len(uint(n / 2)))
	t.shift = 64 - dirBits
	seenBits := uint(bits.Len(uint(n*8 - 1)))
	t.seen, t.mask = make([]uint64, max(1, 1<<seenBits/64)), 1<<seenBits-1
	for _, k := range t.keys {
		i := k & t.mask
		t.seen[i/64] |= 1 << (i % 64)
	}
	t.dir = make([]uint32, 1<<dirBits+1)
	i := 0
	for bucket := range len(t.dir) {
		for i < len(t.keys) && t.keys[i]>>t.shift < uint64(bucket) {
			i++
		}
		t.dir[bucket] = uint32(i)
	}
	return t
}

func (t *table) get(k uint64) (lists32, bool) {
	if len(t.keys) == 0 {
		return 0, false
	}
	k = mix(k)
	if i := k & t.mask; t.seen[i/64]&(1<<(i%64)) == 0 {
		return 0, false
	}
	b := k >> t.shift // 0 for a table of one bucket (shift 64)
	for i := t.dir[b]; i < t.dir[b+1]; i++ {
		switch key := t.keys[i]; {
		case key == k:
			return t.vals[i], true
		case key > k:
			return 0, false
		}
	}
	return 0, false
}

// mix is MurmurHash3's 64-bit finaliser: a bijection, so mixed keys are as
// distinct as the keys, and spread evenly over the directory.
func mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
