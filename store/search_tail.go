package store

import (
	"bytes"
	"context"
	"database/sql"
	"slices"
	"sync"
	"sync/atomic"
	"time"
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
// SQLite keeps its scan: there the tail's reads run in the process that
// serves the pages, and cost them more than they saved (docs/decisions.md).
//
// It relies on what the value keys rely on: a value never changes, and new
// IoCs take ids in commit order under the IoC write lock, so a read of the
// IoCs after hi sees every IoC up to the highest id it returns that will
// ever be.
type valueTail struct {
	mu sync.RWMutex
	// The tail holds every IoC with an id in (lo, hi] that existed when it
	// was read, once a search has started it at the value keys' value_id.
	lo, hi int64
	// generation moves when the tail starts over, so that a fill read
	// before does not append to it; 0 until a search started it.
	generation int64
	ids        []int64
	// text holds each value, ASCII letters lowercased, followed by a 0
	// byte (no text value holds one), from textFrom on; ends[i] is the
	// offset of ids[i]'s.
	text     []byte
	textFrom int
	ends     []int

	// searched is when a search last used the tail (UnixNano): the fill
	// follows new IoCs while searches come.
	searched atomic.Int64
	filling  backgroundRun
}

const (
	// tailMaxIoCs and tailMaxBytes bound the tail's memory: the value keys
	// lag by at most about 70,000 IoCs (the batches pay past 50,000), so
	// the tail stops growing only when the indexer has stopped; a search
	// then reads the rest from iocs as before.
	tailMaxIoCs, tailMaxBytes = 200_000, 16 << 20
	// tailFollow is how long after a search the fill goes on reading new
	// IoCs as they come, every tailPoll: a search then finds at most a
	// poll's worth of them after the tail (a batch of 20,000 IoCs left to
	// the next search's scan cost it 15-30 ms during an ingest).
	tailFollow, tailPoll = 30 * time.Second, 200 * time.Millisecond
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
	t.searched.Store(time.Now().UnixNano())
	t.advance(valueID)
	t.mu.RLock()
	defer t.mu.RUnlock()
	key := []byte(needle)
	for at := t.textFrom; at < len(t.text); {
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
	case t.generation > 0 && valueID <= t.lo:
		// Another search read a later value_id and moved the tail past
		// this one's: the keys hold those IoCs too by now (value_id only
		// moves up), and the statement that reads them comes after.
	case t.generation == 0 || valueID > t.hi:
		t.lo, t.hi = valueID, valueID
		t.ids, t.text, t.textFrom, t.ends = nil, nil, 0, nil
		t.generation++
	default:
		n, _ := slices.BinarySearch(t.ids, valueID+1)
		if n > 0 {
			t.textFrom = t.ends[n-1] + 1
		}
		t.ids, t.ends, t.lo = t.ids[n:], t.ends[n:], valueID
		// The text that went is copied out once it is half the text, not
		// at every move of value_id (about a second apart during an
		// ingest): the searches' process collects less.
		if t.textFrom > len(t.text)/2 {
			t.text = slices.Clone(t.text[t.textFrom:])
			for i := range t.ends {
				t.ends[i] -= t.textFrom
			}
			t.textFrom = 0
		}
	}
}

// followValueTail is fillValueTail's background run: it goes on following
// new IoCs for tailFollow after the last search, and a run a little less
// than its minute.
func (s *Store) followValueTail(ctx context.Context) error { return s.fillValueTail(ctx, true) }

// fillValueTail reads the IoCs after the tail into it, tailRead at a time,
// until it has them all or is full, then when follow says so every
// tailPoll.
func (s *Store) fillValueTail(ctx context.Context, follow bool) error {
	t := &s.tail
	stop := time.Now().Add(tailFollow)
	for {
		t.mu.RLock()
		hi, generation := t.hi, t.generation
		full := len(t.ids) >= tailMaxIoCs || len(t.text)-t.textFrom >= tailMaxBytes
		t.mu.RUnlock()
		if generation == 0 || full {
			return nil
		}
		// Scanned into the text as they come, not a string a value.
		var ids []int64
		var text []byte
		var ends []int
		rows, err := s.reader().QueryContext(ctx, "SELECT id, value FROM iocs WHERE id > ? ORDER BY id LIMIT ?", hi, tailRead)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var value sql.RawBytes
			if err := rows.Scan(&id, &value); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
			text = append(appendLowerASCII(text, value), 0)
			ends = append(ends, len(text)-1)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		t.add(generation, hi, ids, text, ends)
		if len(ids) < tailRead {
			last := time.Unix(0, t.searched.Load())
			if !follow || time.Since(last) > tailFollow || time.Now().After(stop) {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(tailPoll):
			}
		}
	}
}

// add appends a read of the IoCs after hi (ids, their text, its ends) to
// the tail, unless it started over or moved past hi since (generation).
func (t *valueTail) add(generation, hi int64, ids []int64, text []byte, ends []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.generation != generation || t.hi != hi || len(ids) == 0 {
		return
	}
	base := len(t.text)
	t.text = append(t.text, text...)
	t.ids = append(t.ids, ids...)
	for _, end := range ends {
		t.ends = append(t.ends, base+end)
	}
	t.hi = ids[len(ids)-1]
}

// appendLowerASCII appends s to b with its ASCII letters lowercased.
func appendLowerASCII[S ~string | ~[]byte](b []byte, s S) []byte {
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}
