package store

import (
	"cmp"
	"slices"
	"strings"

	"github.com/tifeeds/tifeeds/ioc"
)

type valKey struct {
	kind  ioc.Kind
	value string
}

type sightKey struct {
	valKey
	source string
}

// pendingSighting is one deduplicated sighting of a batch.
type pendingSighting struct {
	sightKey
	score   int
	tags    []string
	tagJSON string
	expires int64      // unix microseconds, as stored
	agg     *aggregate // its IoC's aggregate from the batch alone
	iocID   int64      // once known
	fresh   bool       // its IoC was inserted by this batch, so it has no sighting yet
	inline  bool       // its IoC's row keeps it, the IoC's only sighting (aggregate.feedID)
	text    string     // a Rule's text; "" keeps the stored one
	textAt  int        // the indicator's place in the batch: the latest text wins
}

// storedSighting is a sighting already in the store, read back to recompute
// its IoC's aggregates. feedID is 0 for the row of an IoC without sightings.
type storedSighting struct {
	valKey
	iocID   int64
	feedID  int64
	source  string
	score   int
	tags    []string
	first   int64 // unix microseconds, as stored
	last    int64
	expires int64
	// inline says the sighting is kept in its IoC's row, not in
	// sighting_rows: the IoC's only one (see aggregate.feedID).
	inline bool
	// iocScore, iocTags (JSON) and iocExpires are its IoC's row as stored,
	// what the IoC counted for in the kept counts before the batch.
	iocScore   int
	iocTags    string
	iocExpires int64
}

// aggregate is the summary of an IoC's live sightings.
type aggregate struct {
	valKey
	id      int64
	score   int
	tags    []string
	tagJSON string
	first   int64 // unix microseconds, as stored
	last    int64
	expires int64
	live    bool
	// feedID, when not 0, and source are the IoC's one sighting, which its
	// row keeps (iocs.feed_id, iocs.source) with no row in sighting_rows:
	// the sighting's score, tags, times and expiry are the IoC's. Most IoCs
	// are reported by one feed; a row and two index entries fewer for each
	// is a fifth of PostgreSQL's ingestion (docs/decisions.md, "Inline
	// sightings"). An IoC with more sightings keeps them all as rows.
	feedID int64
	source string
	// inline is the sighting a stored IoC kept in its row, if any.
	inline *storedSighting
	// others says the batch reports the stored IoC from another (feed,
	// source) than its inline sighting's.
	others bool
	// sharedTags says that tags and tagJSON are those of the one sighting
	// the aggregate started from (startFrom), shared rather than copied:
	// a batch's first ingestion makes one aggregate per sighting.
	sharedTags bool
}

// startFrom starts the aggregate from the sighting p, seen from first to
// last. p's tags are normalised (sorted, distinct) and tagJSON is theirs,
// so both are shared, until another sighting adds a tag.
func (a *aggregate) startFrom(p *pendingSighting, first, last int64) {
	a.score, a.first, a.last, a.expires = p.score, first, last, p.expires
	a.tags, a.tagJSON, a.sharedTags = p.tags, p.tagJSON, true
	a.live = true
}

func (a *aggregate) add(score int, tags []string, first, last, expires int64) {
	if !a.live {
		a.score, a.first, a.last, a.expires = score, first, last, expires
		a.tags = slices.Clone(tags)
		a.live = true
		return
	}
	a.score = max(a.score, score)
	a.first = min(a.first, first)
	a.last = max(a.last, last)
	a.expires = max(a.expires, expires)
	for _, t := range tags {
		if !slices.Contains(a.tags, t) {
			if a.sharedTags {
				a.tags, a.tagJSON, a.sharedTags = slices.Clone(a.tags), "", false
			}
			a.tags = append(a.tags, t)
		}
	}
}

func (a *aggregate) seal() {
	if a.sharedTags {
		return // sorted, and encoded, already
	}
	slices.Sort(a.tags)
	a.tagJSON = jsonTags(a.tags)
}

func cmpValKey(x, y valKey) int {
	if c := strings.Compare(string(x.kind), string(y.kind)); c != 0 {
		return c
	}
	return strings.Compare(x.value, y.value)
}

// sightingsInKeyOrder returns rows in the order of the sightings' key,
// (ioc_id, feed_id, source) within one batch's feed, where both writers
// append them to the table and its indexes. The rows are distinct
// (dedupe), so their order changes nothing else. A batch's new IoCs have
// consecutive ids: they are counted into place, in linear time; scattered
// ids are sorted (rows itself, then).
func sightingsInKeyOrder(rows []*pendingSighting) []*pendingSighting {
	if len(rows) == 0 {
		return rows
	}
	lo, hi := rows[0].iocID, rows[0].iocID
	for _, p := range rows {
		lo, hi = min(lo, p.iocID), max(hi, p.iocID)
	}
	if hi-lo >= int64(4*len(rows)) {
		slices.SortFunc(rows, func(x, y *pendingSighting) int {
			if c := cmp.Compare(x.iocID, y.iocID); c != 0 {
				return c
			}
			return strings.Compare(x.source, y.source)
		})
		return rows
	}
	next := make([]int32, hi-lo+2) // next[id-lo]: where id's next row goes
	for _, p := range rows {
		next[p.iocID-lo+1]++
	}
	for k := 1; k < len(next); k++ {
		next[k] += next[k-1]
	}
	out := make([]*pendingSighting, len(rows))
	for _, p := range rows {
		k := p.iocID - lo
		out[next[k]] = p
		next[k]++
	}
	// The few sightings of one IoC (one per source) in source order.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j-1].iocID == out[j].iocID && out[j-1].source > out[j].source; j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}
