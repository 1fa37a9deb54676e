package store

import (
	"context"
	"fmt"
	"time"
)

// KeyIndexer keeps the key tables: ingestion's batches come first, so it
// catches up when the IoCs have been quiet for a tick, or, under constant
// writes, one chunk at a time once the tables have lagged for MaxLag.
type KeyIndexer struct {
	Store *Store
	// Chunk is DefaultKeyChunk when zero.
	Chunk int
	// MaxLag is DefaultKeyLag when zero.
	MaxLag time.Duration

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
// before the indexer takes a chunk between batches.
const DefaultKeyLag = 30 * time.Second

// Tick does the indexer's work of one tick at now: call it every second or
// so.
func (k *KeyIndexer) Tick(ctx context.Context, now time.Time) error {
	chunk, maxLag := k.Chunk, k.MaxLag
	if chunk <= 0 {
		chunk = DefaultKeyChunk
	}
	if maxLag <= 0 {
		maxLag = DefaultKeyLag
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
		if quiet || now.Sub(k.behindSince) >= maxLag {
			for {
				caught, err := k.Store.CatchUpKeys(ctx, chunk)
				if err != nil {
					return err
				}
				if caught {
					k.behindSince = time.Time{}
					break
				}
				if !quiet {
					k.behindSince = now // lagging: a chunk per MaxLag
					break
				}
			}
		}
	}
	if !quiet {
		return nil
	}
	return k.clean(ctx, version, chunk)
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
