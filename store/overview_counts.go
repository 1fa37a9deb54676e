package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/uptrace/bun"
)

// dayMicros is a UTC day in the unit of expires_at: ioc_count_expiry
// numbers the day of an expiry as expires_at / dayMicros.
const dayMicros = 86_400_000_000

// overviewDelta is a change of the kept overview counts (ioc_count_types,
// _feeds, _tags, _expiry) and of the IoCs per score (ioc_count_scores, which
// minScore pages count by), gathered over a transaction's writes and written
// at their end by flush. A writer adds what an IoC counts for after its
// change and subtracts what it counted for before.
type overviewDelta struct {
	types  map[string]int64
	feeds  map[int64]int64
	days   map[int64]int64
	scores map[int64]int64
	// tagSets counts tag sets by their JSON (jsonTags of the sorted tags),
	// each expanded into its tags once at flush: most IoCs of a batch share
	// a feed's few tag sets.
	tagSets map[string]*tagSet
	tags    map[string]int64
}

// tagSet is an IoC's tags, their JSON and, in a delta, how many IoCs more
// carry them.
type tagSet struct {
	tags []string
	json string
	n    int64
}

func newOverviewDelta() *overviewDelta {
	return &overviewDelta{types: map[string]int64{}, feeds: map[int64]int64{}, days: map[int64]int64{},
		scores: map[int64]int64{}, tagSets: map[string]*tagSet{}, tags: map[string]int64{}}
}

// addIoC adds sign times an IoC of kind and score, tagged tags (tagJSON
// their JSON as jsonTags writes it), that expires at expires.
func (d *overviewDelta) addIoC(kind string, score int, tagJSON string, tags []string, expires, sign int64) {
	d.types[kind] += sign
	d.scores[int64(score)] += sign
	d.days[expires/dayMicros] += sign
	if len(tags) == 0 {
		return
	}
	if ts := d.tagSets[tagJSON]; ts != nil {
		ts.n += sign
	} else {
		d.tagSets[tagJSON] = &tagSet{tags: tags, n: sign}
	}
}

// countStored adds sign times what the stored IoCs ids count for, read from
// their rows and sightings: a writer whose change SQL computes (a delete, a
// recompute from the remaining sightings) counts its IoCs before and after
// it. Three reads by key of ids; an id not stored counts for nothing.
func (d *overviewDelta) countStored(ctx context.Context, tx bun.Tx, dialect Dialect, ids []int64, sign int64) error {
	if len(ids) == 0 {
		return nil
	}
	err := scanRows(ctx, tx, `SELECT type, score, expires_at / ?, coalesce(feed_id, 0), count(*) FROM iocs WHERE id IN (?) GROUP BY 1, 2, 3, 4`,
		func(r *sql.Rows) error {
			var kind string
			var score, day, feedID, n int64
			if err := r.Scan(&kind, &score, &day, &feedID, &n); err != nil {
				return err
			}
			d.types[kind] += sign * n
			d.scores[score] += sign * n
			d.days[day] += sign * n
			if feedID != 0 {
				d.feeds[feedID] += sign * n
			}
			return nil
		}, dayMicros, bun.In(ids))
	if err != nil {
		return err
	}
	iocTags, tag := tagRows(dialect)
	err = scanRows(ctx, tx, `SELECT `+tag+`, count(*) FROM `+iocTags+` WHERE iocs.id IN (?) GROUP BY 1`, func(r *sql.Rows) error {
		var tag string
		var n int64
		err := r.Scan(&tag, &n)
		d.tags[tag] += sign * n
		return err
	}, bun.In(ids))
	if err != nil {
		return err
	}
	return scanRows(ctx, tx, `SELECT feed_id, count(DISTINCT ioc_id) FROM sighting_rows WHERE ioc_id IN (?) GROUP BY feed_id`,
		func(r *sql.Rows) error {
			var feedID, n int64
			err := r.Scan(&feedID, &n)
			d.feeds[feedID] += sign * n
			return err
		}, bun.In(ids))
}

// keepCounts runs change, which writes the IoCs ids (and no other) in tx,
// and moves the overview counts by what it changed of them.
func (s *Store) keepCounts(ctx context.Context, tx bun.Tx, ids []int64, change func() error) error {
	d := newOverviewDelta()
	if err := d.countStored(ctx, tx, s.Dialect, ids, -1); err != nil {
		return fmt.Errorf("store: unable to count the indicators before their change: %w", err)
	}
	if err := change(); err != nil {
		return err
	}
	if err := d.countStored(ctx, tx, s.Dialect, ids, 1); err != nil {
		return fmt.Errorf("store: unable to count the indicators after their change: %w", err)
	}
	return d.flush(ctx, rawExec(tx))
}

// countChunk is how many keys one statement of flush moves: two bound
// values each, well under SQLite's limit.
const countChunk = 500

// flush writes the delta to the count tables, in key order (the writers of
// iocs hold the IoC write lock, so the rows see one writer at a time; the
// order is for any other), and deletes the rows it brought to 0.
func (d *overviewDelta) flush(ctx context.Context, exec func(ctx context.Context, query string, args ...any) (int64, error)) error {
	for _, ts := range d.tagSets {
		if ts.n != 0 {
			for _, t := range ts.tags {
				d.tags[t] += ts.n
			}
		}
	}
	clear(d.tagSets)
	if err := flushCounts(ctx, exec, "ioc_count_types", "type", d.types); err != nil {
		return err
	}
	if err := flushCounts(ctx, exec, "ioc_count_feeds", "feed_id", d.feeds); err != nil {
		return err
	}
	if err := flushCounts(ctx, exec, "ioc_count_tags", "tag", d.tags); err != nil {
		return err
	}
	if err := flushCounts(ctx, exec, "ioc_count_scores", "score", d.scores); err != nil {
		return err
	}
	return flushCounts(ctx, exec, "ioc_count_expiry", "day", d.days)
}

// flushCounts adds each non-zero delta of counts to its key's row of table.
func flushCounts[K cmp.Ordered](ctx context.Context, exec func(ctx context.Context, query string, args ...any) (int64, error),
	table, key string, counts map[K]int64) error {
	keys := slices.Sorted(maps.Keys(counts))
	keys = slices.DeleteFunc(keys, func(k K) bool { return counts[k] == 0 })
	lowered := false
	var sb strings.Builder
	for chunk := range slices.Chunk(keys, countChunk) {
		sb.Reset()
		args := make([]any, 0, 2*len(chunk))
		fmt.Fprintf(&sb, "INSERT INTO %s (%s, n) VALUES ", table, key)
		for i, k := range chunk {
			if i > 0 {
				sb.WriteString(", ")
			}
			// Numbered in order of appearance, as SQLite requires.
			fmt.Fprintf(&sb, "($%d, $%d)", 2*i+1, 2*i+2)
			args = append(args, k, counts[k])
			lowered = lowered || counts[k] < 0
		}
		fmt.Fprintf(&sb, " ON CONFLICT (%s) DO UPDATE SET n = %s.n + excluded.n", key, table)
		if _, err := exec(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("store: unable to count the indicators in %s: %w", table, err)
		}
	}
	if lowered {
		// The tables but the tags' are a few hundred rows at most; the
		// tags' is read from its index on n.
		if _, err := exec(ctx, "DELETE FROM "+table+" WHERE n = 0"); err != nil {
			return fmt.Errorf("store: unable to drop the empty counts of %s: %w", table, err)
		}
	}
	return nil
}

// rawExec is tx as the writers' exec, passing $n placeholders to the
// driver as they are (both take them) instead of through bun's "?".
func rawExec(tx bun.Tx) func(ctx context.Context, query string, args ...any) (int64, error) {
	return func(ctx context.Context, query string, args ...any) (int64, error) {
		r, err := tx.Tx.ExecContext(ctx, query, args...)
		if err != nil {
			return 0, err
		}
		return r.RowsAffected()
	}
}

// storedTags decodes an IoC's stored tags (JSON as either database writes
// it) into its sorted tags and their JSON as jsonTags writes them, through
// cache: the IoCs of a batch share few tag sets.
func storedTags(cache map[string]tagSet, stored string) (tagSet, error) {
	if ts, ok := cache[stored]; ok {
		return ts, nil
	}
	var tags []string
	if err := json.Unmarshal([]byte(stored), &tags); err != nil {
		return tagSet{}, fmt.Errorf("indicator tags %q: %w", stored, err)
	}
	slices.Sort(tags)
	ts := tagSet{tags: tags, json: jsonTags(tags)}
	cache[stored] = ts
	return ts, nil
}
