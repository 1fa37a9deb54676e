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
// _feeds, _tags, _expiry), of the IoCs per score (ioc_count_scores, which
// minScore pages count by) and per feed and per tag of each kind
// (ioc_count_feed_types, _tag_types, which the pages in type and value
// order read a kind by), gathered over a transaction's writes and written
// at their end by flush. A writer adds what an IoC counts for after its
// change and subtracts what it counted for before.
type overviewDelta struct {
	types     map[string]int64
	feeds     map[int64]int64
	feedKinds map[ofKind[int64]]int64
	days      map[int64]int64
	scores    map[int64]int64
	// tagSets counts tag sets by their JSON (jsonTags of the sorted tags)
	// and their IoCs' kind, each expanded into its tags once at flush:
	// most IoCs of a batch share a feed's few tag sets.
	tagSets  map[ofKind[string]]*tagSet
	tags     map[string]int64
	tagKinds map[ofKind[string]]int64
}

// ofKind is a key of a count (a feed, a tag) among the IoCs of one kind.
type ofKind[K cmp.Ordered] struct {
	key  K
	kind string
}

func compareOfKind[K cmp.Ordered](a, b ofKind[K]) int {
	return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.kind, b.kind))
}

// tagSet is an IoC's tags, their JSON and, in a delta, how many IoCs more
// carry them.
type tagSet struct {
	tags []string
	json string
	n    int64
}

func newOverviewDelta() *overviewDelta {
	return &overviewDelta{types: map[string]int64{}, feeds: map[int64]int64{}, feedKinds: map[ofKind[int64]]int64{},
		days: map[int64]int64{}, scores: map[int64]int64{}, tagSets: map[ofKind[string]]*tagSet{}, tags: map[string]int64{},
		tagKinds: map[ofKind[string]]int64{}}
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
	set := ofKind[string]{tagJSON, kind}
	if ts := d.tagSets[set]; ts != nil {
		ts.n += sign
	} else {
		d.tagSets[set] = &tagSet{tags: tags, n: sign}
	}
}

// addFeed adds n IoCs of kind to those of feedID.
func (d *overviewDelta) addFeed(feedID int64, kind string, n int64) {
	d.feeds[feedID] += n
	d.feedKinds[ofKind[int64]{feedID, kind}] += n
}

// addTag adds n IoCs of kind to those tagged tag.
func (d *overviewDelta) addTag(tag, kind string, n int64) {
	d.tags[tag] += n
	d.tagKinds[ofKind[string]{tag, kind}] += n
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
				d.addFeed(feedID, kind, sign*n)
			}
			return nil
		}, dayMicros, bun.In(ids))
	if err != nil {
		return err
	}
	iocTags, tag := tagRows(dialect)
	err = scanRows(ctx, tx, `SELECT `+tag+`, iocs.type, count(*) FROM `+iocTags+` WHERE iocs.id IN (?) GROUP BY 1, 2`, func(r *sql.Rows) error {
		var tag, kind string
		var n int64
		err := r.Scan(&tag, &kind, &n)
		d.addTag(tag, kind, sign*n)
		return err
	}, bun.In(ids))
	if err != nil {
		return err
	}
	return scanRows(ctx, tx, `SELECT s.feed_id, iocs.type, count(DISTINCT s.ioc_id) FROM sighting_rows s JOIN iocs ON iocs.id = s.ioc_id
WHERE s.ioc_id IN (?) GROUP BY 1, 2`,
		func(r *sql.Rows) error {
			var feedID, n int64
			var kind string
			err := r.Scan(&feedID, &kind, &n)
			d.addFeed(feedID, kind, sign*n)
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

// countChunk is how many keys one statement of flush moves: three bound
// values each at most, well under SQLite's limit.
const countChunk = 500

// flush writes the delta to the count tables, in key order (the writers of
// iocs hold the IoC write lock, so the rows see one writer at a time; the
// order is for any other), and deletes the rows it brought to 0.
func (d *overviewDelta) flush(ctx context.Context, exec func(ctx context.Context, query string, args ...any) (int64, error)) error {
	for set, ts := range d.tagSets {
		if ts.n != 0 {
			for _, t := range ts.tags {
				d.addTag(t, set.kind, ts.n)
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
	if err := flushKindCounts(ctx, exec, "ioc_count_feed_types", "feed_id", d.feedKinds); err != nil {
		return err
	}
	if err := flushCounts(ctx, exec, "ioc_count_tags", "tag", d.tags); err != nil {
		return err
	}
	if err := flushKindCounts(ctx, exec, "ioc_count_tag_types", "tag", d.tagKinds); err != nil {
		return err
	}
	if err := flushCounts(ctx, exec, "ioc_count_scores", "score", d.scores); err != nil {
		return err
	}
	return flushCounts(ctx, exec, "ioc_count_expiry", "day", d.days)
}

// writerExec is how flush runs a statement: rawExec of the writers' tx.
type writerExec = func(ctx context.Context, query string, args ...any) (int64, error)

// flushCounts adds each non-zero delta of counts to its key's row of table.
func flushCounts[K cmp.Ordered](ctx context.Context, exec writerExec, table, key string, counts map[K]int64) error {
	return flushKeyed(ctx, exec, table, []string{key}, counts, cmp.Compare[K], func(k K) []any { return []any{k} })
}

// flushKindCounts adds each non-zero delta of counts to its row of table,
// keyed by key and type.
func flushKindCounts[K cmp.Ordered](ctx context.Context, exec writerExec, table, key string, counts map[ofKind[K]]int64) error {
	return flushKeyed(ctx, exec, table, []string{key, "type"}, counts, compareOfKind[K],
		func(k ofKind[K]) []any { return []any{k.key, k.kind} })
}

// flushKeyed adds each non-zero delta of counts to the row of table whose
// columns cols hold the key's values, and deletes the rows lowered to 0.
func flushKeyed[K comparable](ctx context.Context, exec writerExec, table string, cols []string, counts map[K]int64,
	compare func(a, b K) int, values func(K) []any) error {
	keys := slices.SortedFunc(maps.Keys(counts), compare)
	keys = slices.DeleteFunc(keys, func(k K) bool { return counts[k] == 0 })
	var lowered []K
	names := strings.Join(cols, ", ")
	var sb strings.Builder
	for chunk := range slices.Chunk(keys, countChunk) {
		sb.Reset()
		fmt.Fprintf(&sb, "INSERT INTO %s (%s, n) VALUES ", table, names)
		args := make([]any, 0, (len(cols)+1)*len(chunk))
		for i, k := range chunk {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteByte('(')
			for j, v := range append(values(k), counts[k]) {
				if j > 0 {
					sb.WriteString(", ")
				}
				args = append(args, v)
				// Numbered in order of appearance, as SQLite requires.
				fmt.Fprintf(&sb, "$%d", len(args))
			}
			sb.WriteByte(')')
			if counts[k] < 0 {
				lowered = append(lowered, k)
			}
		}
		fmt.Fprintf(&sb, " ON CONFLICT (%s) DO UPDATE SET n = %s.n + excluded.n", names, table)
		if _, err := exec(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("store: unable to count the indicators in %s: %w", table, err)
		}
	}
	// Only the rows it lowered can have fallen to 0, and each has its key's
	// first column: the tag tables have as many rows as tags, which a scan
	// for n = 0 would read whole.
	for chunk := range slices.Chunk(lowered, countChunk) {
		sb.Reset()
		fmt.Fprintf(&sb, "DELETE FROM %s WHERE n = 0 AND %s IN (", table, cols[0])
		args := make([]any, len(chunk))
		for i, k := range chunk {
			if i > 0 {
				sb.WriteString(", ")
			}
			args[i] = values(k)[0]
			fmt.Fprintf(&sb, "$%d", i+1)
		}
		sb.WriteByte(')')
		if _, err := exec(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("store: unable to drop the empty counts of %s: %w", table, err)
		}
	}
	return nil
}

// countsInto scans a row of a key and its count (a kept count's row) into
// m.
func countsInto[K comparable](m map[K]int64) func(*sql.Rows) error {
	return func(r *sql.Rows) error {
		var k K
		var n int64
		err := r.Scan(&k, &n)
		m[k] = n
		return err
	}
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
