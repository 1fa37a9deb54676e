package store

import (
	"bytes"
	"context"
	"slices"
	"sync"
)

// valueTail holds, for PostgreSQL's searches, the values of the IoCs after
// the value keys (ioc_keys_state.value_id), which a search would otherwise
// read from iocs and match with ILIKE one row at a time: during an ingest
// at 10,000,000 IoCs the value keys lag by 20,000-60,000 IoCs, and that
// scan took 17-47 ms of every search (0.3-0.5 µs a row to read, as much
// again to match). The store reads each new value once, in the background,
// and a search finds in memory the ones that contain it: iocs.value is
// COLLATE "C", whose ILIKE folds ASCII letters only, as the tail does.
// Those it finds are looked up again by id, which drops the IoCs gone since
// the tail read them, as the keys' arm drops those gone since their keys.
//
// It relies on what the value keys rely on: a value never changes, and new
// IoCs take ids in commit order under the IoC write lock, so a read of the
// IoCs after hi sees every IoC up to the highest id it returns that will
// ever be.
type valueTail struct {
	mu sync.RWMutex
	// The tail holds every IoC with an id in (lo, hi] that existed when it
	// was read; set once a search set lo to the value keys' value_id.
	set    bool
	lo, hi int64
	// generation moves when the tail starts over, so that a fill read
	// before does not append to it.
	generation int64
	ids        []int64
	// text holds each value, ASCII letters lowercased, followed by a 0
	// byte (no text value holds one); ends[i] is the offset of ids[i]'s.
	text []byte
	ends []int

	filling backgroundRun
}

const (
	// tailMaxIoCs and tailMaxBytes bound the tail's memory: the value keys
	// lag by at most about 70,000 IoCs (the batches pay past 50,000), so
	// the tail stops growing only when the indexer has stopped; a search
	// then reads the rest from iocs as before.
	tailMaxIoCs, tailMaxBytes = 200_000, 16 << 20
	// tailRead is how many IoCs a read of the tail takes at once (values
	// are 2,048 bytes at most: 10 MB).
	tailRead = 5_000
)

// tailWork is the tail's reads in the log's words.
const tailWork = "read the values of the new indicators for search"

// tailSearch says, for a search with the value keys complete up to
// valueID, up to which id the tail answers (past it the search reads iocs)
// and which IoCs after valueID hold needle (the search, its ASCII letters
// lowercased) as the tail read them; dense says more than limit do.
func (t *valueTail) tailSearch(valueID int64, needle string, limit int) (hi int64, matches []int64, dense bool) {
	t.advance(valueID)
	t.mu.RLock()
	defer t.mu.RUnlock()
	key := []byte(needle)
	for at := 0; at < len(t.text); {
		i := bytes.Index(t.text[at:], key)
		if i < 0 {
			break
		}
		if len(matches) == limit {
			return 0, nil, true
		}
		// The value the match begins in: the first whose end is past it.
		n, _ := slices.BinarySearch(t.ends, at+i)
		matches = append(matches, t.ids[n])
		at = t.ends[n] + 1
	}
	return t.hi, matches, false
}

// advance moves the tail's start to valueID: the IoCs up to it are the
// value keys'. A tail that valueID passed starts over.
func (t *valueTail) advance(valueID int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.set && valueID <= t.lo:
		// Another search read a later value_id and moved the tail past
		// this one's: the keys hold those IoCs too by now (value_id only
		// moves up), and the statement that reads them comes after.
	case !t.set || valueID > t.hi:
		t.set, t.lo, t.hi = true, valueID, valueID
		t.ids, t.text, t.ends = nil, nil, nil
		t.generation++
	default:
		n, _ := slices.BinarySearch(t.ids, valueID+1)
		cut := 0
		if n > 0 {
			cut = t.ends[n-1] + 1
		}
		// Copied, so that what went is freed.
		t.ids = slices.Clone(t.ids[n:])
		t.text = slices.Clone(t.text[cut:])
		ends := make([]int, len(t.ends)-n)
		for i, end := range t.ends[n:] {
			ends[i] = end - cut
		}
		t.ends = ends
		t.lo = valueID
	}
}

// fillValueTail reads the IoCs after the tail into it, tailRead at a time,
// until it has them all or is full.
func (s *Store) fillValueTail(ctx context.Context) error {
	t := &s.tail
	for {
		t.mu.RLock()
		set, hi, generation := t.set, t.hi, t.generation
		full := len(t.ids) >= tailMaxIoCs || len(t.text) >= tailMaxBytes
		t.mu.RUnlock()
		if !set || full {
			return nil
		}
		var rows []struct {
			ID    int64
			Value string
		}
		if err := s.reader().NewRaw("SELECT id, value FROM iocs WHERE id > ? ORDER BY id LIMIT ?", hi, tailRead).
			Scan(ctx, &rows); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		t.mu.Lock()
		if t.generation == generation && t.hi == hi {
			for _, r := range rows {
				t.ids = append(t.ids, r.ID)
				t.text = appendLowerASCII(t.text, r.Value)
				t.text = append(t.text, 0)
				t.ends = append(t.ends, len(t.text)-1)
			}
			t.hi = rows[len(rows)-1].ID
		}
		t.mu.Unlock()
		if len(rows) < tailRead {
			return nil
		}
	}
}

// appendLowerASCII appends s to b with its ASCII letters lowercased.
func appendLowerASCII(b []byte, s string) []byte {
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}
