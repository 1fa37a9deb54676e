package store

import (
	"context"
	"fmt"
	"math"
	"time"
)

// KeyIndexer keeps the key tables. It catches up when the IoCs have been
// quiet for a tick. Under constant writes it keeps pace: while more than
// KeepUnder IoCs changed since the tables' stamp, it takes chunks for up
// to Budget of each tick; with fewer, a chunk once they have lagged for
// MaxLag. A keyed page reads the IoCs changed since from iocs and sorts
// them, which costs about a millisecond per 5,000 of them: with the tables
// a whole ingest run behind (500,000 IoCs at 10,000,000), first pages took
// 0.1-0.6 s that way and 1-13 s by the plain query (docs/benchmarks.md,
// "Growth curve").
type KeyIndexer struct {
	Store *Store
	// Chunk is DefaultKeyChunk when zero.
	Chunk int
	// MaxLag is DefaultKeyLag when zero.
	MaxLag time.Duration
	// KeepUnder is DefaultKeepUnder when zero.
	KeepUnder int
	// Budget is how long a tick under constant writes may spend catching
	// up: DefaultKeyBudget when zero. On SQLite the chunks and the batches
	// share the one writer, so a budget of half the tick leaves ingestion
	// half of it at least; on PostgreSQL they write beside each other, and
	// the budget bounds the indexer to half a core.
	Budget time.Duration
	// Clock measures the budget (time.Now when nil).
	Clock func() time.Time

	lastStamp   int64
	behindSince time.Time
	cleaned     KeyPositions
	// The cleaner's pass: the IoCs' version (ioc_stats) when it began at
	// the start of every key table, and the tables it has been through
	// since. Once through all, it rests until the version moves: no key
	// can have gone stale meanwhile, and a pass costs PostgreSQL some
	// 0.3 s a quiet second (80 of them at 1,000,000 IoCs).
	passVersion int64
	passed      [keyTables]bool
	resting     bool
}

// DefaultKeyLag is how long the key tables may lag behind constant writes
// by fewer than KeepUnder IoCs before the indexer takes a chunk between
// batches.
const DefaultKeyLag = 30 * time.Second

// DefaultKeepUnder is how many changed IoCs the key tables may lag behind
// constant writes before the indexer takes chunks every tick: a keyed page
// sorts that many in a few milliseconds.
const DefaultKeepUnder = 20_000

// DefaultKeyBudget is how long a tick under constant writes may catch up:
// half of the runner's one-second tick.
const DefaultKeyBudget = 500 * time.Millisecond

// Tick does the indexer's work of one tick at now: call it every second or
// so.
func (k *KeyIndexer) Tick(ctx context.Context, now time.Time) error {
	chunk, maxLag, keepUnder, budget, clock := k.Chunk, k.MaxLag, k.KeepUnder, k.Budget, k.Clock
	if chunk <= 0 {
		chunk = DefaultKeyChunk
	}
	if maxLag <= 0 {
		maxLag = DefaultKeyLag
	}
	if keepUnder <= 0 {
		keepUnder = DefaultKeepUnder
	}
	if budget <= 0 {
		budget = DefaultKeyBudget
	}
	if clock == nil {
		clock = time.Now
	}
	var keysStamp, stamp, version int64
	if err := k.Store.reader().QueryRowContext(ctx, `SELECT k.stamp, st.stamp, st.version FROM ioc_keys_state k, ioc_stats st
WHERE k.id = 1 AND st.id = 1`).Scan(&keysStamp, &stamp, &version); err != nil {
		return fmt.Errorf("store: unable to read the indicator keys' state: %w", err)
	}
	quiet := stamp == k.lastStamp
	k.lastStamp = stamp
	if keysStamp >= stamp {
		k.behindSince = time.Time{}
	} else {
		if k.behindSince.IsZero() {
			k.behindSince = now
		}
		// How long this tick catches up: until caught up when quiet, for
		// the budget while constant writes outrun the tables by more than
		// keepUnder, one chunk once they have lagged for maxLag.
		spend := time.Duration(-1)
		switch {
		case quiet:
			spend = math.MaxInt64
		case now.Sub(k.behindSince) >= maxLag:
			spend = 0
		}
		if !quiet {
			changed, err := k.Store.changedSince(ctx, keysStamp, keepUnder+1)
			if err != nil {
				return err
			}
			if changed > keepUnder {
				spend = budget
			}
		}
		if spend >= 0 {
			if err := k.catchUp(ctx, chunk, clock, spend, now); err != nil {
				return err
			}
		}
	}
	if !quiet {
		return nil
	}
	return k.clean(ctx, version, chunk)
}

// catchUp takes chunks until the tables are caught up or budget has passed
// (at least one chunk).
func (k *KeyIndexer) catchUp(ctx context.Context, chunk int, clock func() time.Time, budget time.Duration, now time.Time) error {
	start := clock()
	for {
		caught, err := k.Store.CatchUpKeys(ctx, chunk)
		if err != nil {
			return err
		}
		if caught {
			k.behindSince = time.Time{}
			return nil
		}
		if clock().Sub(start) >= budget {
			k.behindSince = now
			return nil
		}
	}
}

// clean takes the cleaner's next chunk, unless it rests.
func (k *KeyIndexer) clean(ctx context.Context, version int64, chunk int) error {
	if k.resting {
		if version == k.passVersion {
			return nil
		}
		k.resting = false
	}
	if k.passed == ([keyTables]bool{}) && k.cleaned == (KeyPositions{}) {
		k.passVersion = version
	}
	next, err := k.Store.CleanKeys(ctx, k.cleaned, chunk)
	if err != nil {
		return err
	}
	k.cleaned = next
	done := true
	for i, start := range next.starts() {
		k.passed[i] = k.passed[i] || start // past the table's end
		done = done && k.passed[i]
	}
	if done {
		k.cleaned, k.passed = KeyPositions{}, [keyTables]bool{}
		k.resting = version == k.passVersion
	}
	return nil
}
