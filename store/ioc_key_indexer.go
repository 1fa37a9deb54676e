package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tifeeds/tifeeds/internal/background"
)

// KeyIndexer keeps the key tables. It catches up when the IoCs have been
// quiet for a tick, until they change. Under constant
// writes it keeps pace: while more than KeepUnder IoCs changed since the
// tables' stamp, it takes chunks for up to Budget of each tick; with
// fewer, a chunk once they have lagged for MaxLag. The value keys, which
// only a search reads, come after the order and tag keys, in what the
// budget leaves of a tick and half a budget at least. A keyed page reads
// the IoCs changed since from iocs and sorts them, which costs about a
// millisecond per 5,000 of them: with the tables a whole ingest run behind
// (500,000 IoCs at 10,000,000), first pages took 0.1-0.6 s that way and
// 1-13 s by the plain query (docs/benchmarks.md, "Growth curve"). Once an
// indexer has ticked on a store, the batches pay whatever lag is left past
// Store.KeyLagLimit themselves (payKeyDebt).
type KeyIndexer struct {
	Store *Store
	// Chunk is DefaultKeyChunk when zero.
	Chunk int
	// MaxLag is DefaultKeyLag when zero.
	MaxLag time.Duration
	// KeepUnder is DefaultKeepUnder when zero.
	KeepUnder int
	// Budget is how long a tick under constant writes may spend catching
	// up the order and tag keys, the value keys half of it more while
	// they lag too: DefaultKeyBudget when zero. On SQLite the chunks and
	// the batches share the one writer, so a budget of half the tick
	// leaves ingestion a quarter of it at least (half while the value keys
	// keep pace); on PostgreSQL they write beside each other, and the
	// budget bounds the indexer to three quarters of a core.
	Budget time.Duration
	// CleanAfter is how long the IoCs must have stayed as they were (no
	// batch, no sweep) before the key cleaner takes its chunks:
	// DefaultCleanAfter when zero.
	CleanAfter time.Duration
	// CleanStarved is how long writes that never stay still for
	// CleanAfter may keep the cleaner waiting: past it, the cleaner takes
	// one piece every CleanAfter while they go on. DefaultCleanStarved
	// when zero.
	CleanStarved time.Duration
	// Clock measures the budget (time.Now when nil).
	Clock func() time.Time

	lastStamp int64
	// lastVersion is the IoCs' version (ioc_stats) at the last tick, and
	// versionSeen when a tick first saw it.
	lastVersion int64
	versionSeen time.Time
	// cleanDue is when the cleaner takes a piece though the IoCs are
	// still changing.
	cleanDue time.Time
	// The two kinds of work: the order and tag keys, and the value keys.
	orders, values keyWork
}

// DefaultKeyLag is how long the key tables may lag behind constant writes
// by fewer than KeepUnder IoCs before the indexer takes a chunk between
// batches.
const DefaultKeyLag = 30 * time.Second

// DefaultKeepUnder is how many changed IoCs the key tables may lag behind
// constant writes before the indexer takes chunks every tick: a keyed page
// sorts that many in a few milliseconds.
const DefaultKeepUnder = 20_000

// DefaultKeyBudget is how long a tick under constant writes may catch up
// the order and tag keys: half of the runner's one-second tick (the value
// keys may take half of it again).
const DefaultKeyBudget = 500 * time.Millisecond

// DefaultCleanAfter is how long the IoCs stay as they were before the key
// cleaner takes its chunks: an ingest run's batches commit a second or
// more apart at times (the fetch of the next page, a slow feed), and
// another instance's batches under way show only once they commit.
const DefaultCleanAfter = 5 * time.Second

// DefaultCleanStarved is how long the cleaner waits for a quiet before it
// takes a piece at a time anyway. Feeds whose batches commit less than
// CleanAfter apart all day would otherwise keep every swept IoC's keys:
// eleven 10,000,000-IoC growth curves, each ingesting and sweeping
// 1,000,000 with a quiet of seconds between, left 18,644,800 stale tag
// keys beside 10,000,000 live ones. A piece every CleanAfter
// (chunk/cleanPieces keys of each table: 35-194 ms at 10,000,000 IoCs on
// PostgreSQL) walks 7,200,000 keys of each table an hour: a pass over
// 10,000,000 IoCs' keys in about an hour and a half.
const DefaultCleanStarved = time.Minute

// Keep says the indexer will tick on its store from now on, before its
// first tick: the batches keep the keys' lag bounded (payKeyDebt) from
// their first rather than from that tick, a second after start. In the
// bench, a run's first second wrote 120,000 IoCs without keys before its
// process's indexer first ticked: past a tenth of the 1,120,000 stored,
// pages fell back to plain queries, and EXPIRATION_DATE DESC took 625 ms.
func (k *KeyIndexer) Keep() { k.Store.keysKept.Store(true) }

// Tick does the indexer's work of one tick at now, at the background's
// priority (background.Run): call it every second or so.
func (k *KeyIndexer) Tick(ctx context.Context, now time.Time) (err error) {
	background.Run(func() { err = k.tick(ctx, now) })
	return err
}

func (k *KeyIndexer) tick(ctx context.Context, now time.Time) error {
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
	cleanAfter, starved := k.CleanAfter, k.CleanStarved
	if cleanAfter <= 0 {
		cleanAfter = DefaultCleanAfter
	}
	if starved <= 0 {
		starved = DefaultCleanStarved
	}
	k.Keep()
	var keysStamp, stamp, version, valueID, lastID int64
	if err := k.Store.reader().QueryRowContext(ctx, `SELECT k.stamp, st.stamp, st.version, k.value_id,
	(SELECT coalesce(max(id), 0) FROM iocs) FROM ioc_keys_state k, ioc_stats st
WHERE k.id = 1 AND st.id = 1`).Scan(&keysStamp, &stamp, &version, &valueID, &lastID); err != nil {
		return fmt.Errorf("store: unable to read the indicator keys' state: %w", err)
	}
	// Quiet: no IoC changed since the last tick. A quiet catch-up goes on
	// while none does: on SQLite the batches wait for the writer while a
	// chunk holds it, and a tick that began just before a waiting batch
	// committed took the writes for over and caught up without a budget,
	// a chunk between each batch (the indexer had 23.5 s of a 27.7 s run
	// at 10,000,000 IoCs). It stops at the first change.
	quiet := stamp == k.lastStamp
	moved := func(ctx context.Context) (bool, error) {
		now, err := k.Store.iocStamp(ctx)
		return now != stamp, err
	}
	if !quiet {
		moved = nil
	}
	k.lastStamp = stamp
	var ordersHeld time.Duration
	// The order and tag keys first: every page reads them. Catch up until
	// caught up when quiet, for the budget while constant writes outrun
	// them by more than keepUnder, one chunk once they have lagged for
	// maxLag.
	if keysStamp >= stamp {
		k.orders.caughtUp()
	} else {
		spend := time.Duration(-1)
		switch lagged := k.orders.behind(now); {
		case quiet:
			spend = math.MaxInt64
		case lagged >= maxLag:
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
		var err error
		if ordersHeld, err = k.orders.take(ctx, now, spend, k.Store.catchUpOrderKeys, chunk, clock, moved); err != nil {
			return err
		}
	}
	// Then the value keys, which only a search reads: until caught up when
	// quiet; while they lag by more than keepUnder new IoCs, for what is
	// left of the budget and half the budget at least; one chunk once they
	// have lagged for maxLag. A search scans the values of the IoCs after
	// them (1.2 s for 7,000,000 at 10,000,000): with nothing but what the
	// order keys left, a long ingest at 10,000,000 left them a run behind
	// after each run. So a tick may take one and a half budgets, and does
	// when both lag: at 10,000,000 on SQLite the order keys alone took
	// half of the writer.
	if valueID >= lastID {
		k.values.caughtUp()
	} else {
		spend := time.Duration(-1)
		switch lagged := k.values.behind(now); {
		case quiet:
			spend = math.MaxInt64
		case lastID-valueID > int64(keepUnder):
			spend = max(budget-ordersHeld, budget/2)
		case lagged >= maxLag:
			spend = 0
		}
		if _, err := k.values.take(ctx, now, spend, k.Store.catchUpValueKeys, chunk, clock, moved); err != nil {
			return err
		}
	}
	// The cleaner only once nothing at all has changed for CleanAfter: a
	// sweep's deletes do not move the stamp, and during one the cleaner
	// took a chunk every second (0.2-1.7 s of PostgreSQL's time at
	// 10,000,000 IoCs) beside the sweep and the pages; a batch committing
	// more than a second after the last gave it a chunk beside the ingest.
	// The version moves on every change. Writes that never stay still
	// that long get a piece every CleanAfter once they have kept the
	// cleaner waiting for CleanStarved (DefaultCleanStarved).
	if version != k.lastVersion || k.versionSeen.IsZero() {
		k.lastVersion, k.versionSeen = version, now
	}
	if k.cleanDue.IsZero() {
		k.cleanDue = now.Add(starved)
	}
	if now.Sub(k.versionSeen) >= cleanAfter {
		k.cleanDue = now.Add(starved)
		return k.Store.cleanWhileQuiet(ctx, chunk, version)
	}
	if now.Before(k.cleanDue) {
		return nil
	}
	k.cleanDue = now.Add(cleanAfter)
	_, err := k.Store.cleanNextKeys(ctx, cleanPiece(chunk))
	return err
}

// keyWork is the indexer's account of one kind of its work: since when
// it has been behind, and what an IoC cost its last chunk (catchUp sizes
// chunks with it).
type keyWork struct {
	behindSince time.Time
	perIoC      time.Duration
}

// behind notes that the work is behind at now and says for how long it
// has been.
func (w *keyWork) behind(now time.Time) time.Duration {
	if w.behindSince.IsZero() {
		w.behindSince = now
	}
	return now.Sub(w.behindSince)
}

// caughtUp notes that the work is done.
func (w *keyWork) caughtUp() { w.behindSince = time.Time{} }

// take catches up with chunkOf for spend (nothing when it is negative; see
// catchUp) and says how long it held the store. Still behind after, the
// work counts its lag from now: it took what it could.
func (w *keyWork) take(ctx context.Context, now time.Time, spend time.Duration,
	chunkOf func(context.Context, int, func() time.Time) (bool, time.Duration, error),
	chunk int, clock func() time.Time, moved func(context.Context) (bool, error)) (time.Duration, error) {
	if spend < 0 {
		return 0, nil
	}
	caught, held, err := catchUp(ctx, chunkOf, chunk, clock, spend, moved, &w.perIoC)
	if err != nil {
		return held, err
	}
	if caught {
		w.caughtUp()
	} else {
		w.behindSince = now
	}
	return held, nil
}

// catchUp takes chunks of one kind of keys' work (chunkOf) until they are
// caught up, they have held the store for budget, or moved says an IoC
// changed (at least one chunk), and says how long they held it. A chunk
// is sized to end within what is left of the budget at the cost per IoC
// the kind's last chunks took (perIoC, kept up to date): whole chunks of
// 50,000 IoCs took 0.5-0.9 s at 10,000,000 on SQLite, so a tick that
// started one with little budget left held the writer for most of a
// second. Only the time a chunk holds the store counts, not its wait for
// SQLite's writer: counted, the waits for the batches took most of the
// budget, and the order keys fell a run behind by the end of each at
// 10,000,000.
func catchUp(ctx context.Context, chunkOf func(context.Context, int, func() time.Time) (bool, time.Duration, error),
	chunk int, clock func() time.Time, budget time.Duration, moved func(context.Context) (bool, error),
	perIoC *time.Duration) (caught bool, held time.Duration, err error) {
	for {
		size := chunk
		if left := budget - held; budget > 0 && *perIoC > 0 && left < time.Duration(chunk)**perIoC {
			size = max(int(left / *perIoC), chunk/minChunkShare, 1)
		}
		caught, took, err := chunkOf(ctx, size, clock)
		held += took
		if err != nil || caught {
			return caught, held, err
		}
		*perIoC = took / time.Duration(size)
		if held >= budget {
			return false, held, nil
		}
		if moved != nil {
			if stop, err := moved(ctx); err != nil || stop {
				return false, held, err
			}
		}
	}
}

// minChunkShare bounds how small catchUp makes a chunk: a chunk costs a
// commit and a few statements whatever its size.
const minChunkShare = 20
