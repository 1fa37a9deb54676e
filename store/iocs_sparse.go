package store

import (
	"context"
	"time"
)

// sparseRaceKeys is the most keys of a sparse find (sparseKeys) that a
// page reads and sorts without racing a walk of its order (pageOfSparse):
// a few milliseconds of rows.
var sparseRaceKeys = 2_000

// sparseAlone is how long pageOfSparse's first way runs alone before the
// other starts beside it.
var sparseAlone = 10 * time.Millisecond

// sparseRaceChanged is the most IoCs changed since the keys for
// pageOfSparse to race its two ways; past it, it takes the one expected to
// cost less. Right after a restart with a run's last 40,000 IoCs still to
// key, a first page of the tag of 1 % by score at 1,000,000 IoCs took
// 108 ms raced, 41 ms read alone.
var sparseRaceChanged = 10_000

// sparseWays is which of the two ways to a page of a sparse find
// pageOfSparse takes: both, but tests take one alone.
var sparseWays = struct{ walk, read bool }{walk: true, read: true}

// racesSparse says whether a page of f through plan goes through
// pageOfSparse: on SQLite, when plan finds its IoCs through more keys than
// sparseRaceKeys, not in the page's order, and f has no expiry range,
// whose pages the zones serve (pageOfZones, pageInExpiryZones).
func (s *Store) racesSparse(f IoCFilter, plan *keyPlan) bool {
	return s.Dialect == SQLite && plan != nil && !plan.settled && plan.find != nil && plan.find.sparse &&
		!plan.find.ordered() && plan.find.keys > sparseRaceKeys && f.ExpiresBefore == nil && f.ExpiresAfter == nil
}

// pageOfSparse reads up to limit IoCs of f in order o after the cursor,
// which plan finds through few keys (racesSparse), two ways at once
// (race): reading every IoC of the keys and sorting them, whose cost grows
// with the keys, or the page's way as though many IoCs matched (a walk of
// the order's keys probing the tag's, each kind's values), done at the
// page's last match: soon when the matches are spread through the order,
// late when they lie together at its far end. Read and sorted, a page
// of a tag on 1 % of 3,000,000 IoCs (30,000 keys) took 101-126 ms on
// SQLite in every order but id, where a walk meets a page of it within
// some 10,000 IoCs.
//
// The way that goes first, alone for sparseAlone, is the one expected to
// cost less: the read's rows, one a key, against the walk's probes, some
// limit × stored / keys of them if the matches are spread evenly, each
// about a sixth of a row read at random (at 10,000,000 IoCs, a tag of 1 %:
// 0.6 µs a probe, 2.5 µs a row).
func (s *Store) pageOfSparse(ctx context.Context, f IoCFilter, o IoCOrder, plan *keyPlan, capped, after bool, cursorValue any, cursorID int64, limit int) ([]IoC, error) {
	walkPlan, readPlan := *plan, *plan
	walkPlan.find, readPlan.settled = nil, true
	var walked, read []IoC
	walk := func(ctx context.Context) (bool, error) {
		var err error
		walked, err = s.pageOf(ctx, f, o, &walkPlan, true, after, cursorValue, cursorID, limit)
		return true, err
	}
	readAll := func(ctx context.Context) (bool, error) {
		var err error
		read, err = s.pageOf(ctx, f, o, &readPlan, capped, after, cursorValue, cursorID, limit)
		return true, err
	}
	if !sparseWays.read {
		_, err := walk(ctx)
		return walked, err
	}
	if !sparseWays.walk {
		_, err := readAll(ctx)
		return read, err
	}
	keys := int64(plan.find.keys)
	walkFirst := int64(limit)*plan.stored < 6*keys*keys
	ways := []wayStep{readAll, walk}
	if walkFirst {
		ways[0], ways[1] = walk, readAll
	}
	if plan.changed > sparseRaceChanged {
		// Each way reads every IoC changed since the keys for the
		// condition (keyArms): side by side, the two did that twice.
		_, err := ways[0](ctx)
		if walkFirst {
			return walked, err
		}
		return read, err
	}
	way, err := s.race(ctx, sparseAlone, ways...)
	if err != nil {
		return nil, err
	}
	if (way == 0) == walkFirst {
		return walked, nil
	}
	return read, nil
}
