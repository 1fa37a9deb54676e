package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"golang.org/x/sync/errgroup"

	"github.com/tifeeds/tifeeds/ioc"
)

// IoCKey is the natural key of an IoC.
type IoCKey struct {
	Type  ioc.Kind
	Value string // normalised
}

// lookupChunk bounds the ids of one IN list, well under both dialects'
// limits on bound parameters.
const lookupChunk = 1000

// IoCsByKeys returns the stored IoCs among keys, by key. Keys not stored are
// absent from the map. Each kind's values go as one JSON (SQLite) or array
// (PostgreSQL) parameter, joined to iocs by its unique index, so 10,000
// values cost the database's own join. A lookup of many values is shared
// out among the cores, each share read on a connection of its own.
func (s *Store) IoCsByKeys(ctx context.Context, keys []IoCKey) (map[IoCKey]*IoC, error) {
	byType := map[ioc.Kind][]string{}
	seen := make(map[IoCKey]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			byType[k.Type] = append(byType[k.Type], k.Value)
		}
	}
	shares := lookupShares(byType, lookupWorkers(len(seen)))
	read := make([][]*IoC, len(shares))
	readShare := func(ctx context.Context, i int) (err error) {
		for _, p := range shares[i] {
			if read[i], err = s.lookUp(ctx, p, read[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if len(shares) == 1 {
		if err := readShare(ctx, 0); err != nil {
			return nil, err
		}
	} else {
		g, gctx := errgroup.WithContext(ctx)
		for i := range shares {
			g.Go(func() error { return readShare(gctx, i) })
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
	}
	found := make(map[IoCKey]*IoC, len(seen))
	for _, iocs := range read {
		for _, c := range iocs {
			found[IoCKey{Type: c.Type, Value: c.Value}] = c
		}
	}
	return found, nil
}

// lookupPart is values of one kind, read by one statement.
type lookupPart struct {
	kind   ioc.Kind
	values []string
}

// minSharedLookup is the fewest values a lookup shares out among the cores:
// fewer are read in well under a millisecond.
const minSharedLookup = 1000

// lookupWorkers is how many connections a lookup of n values reads on at
// once: one per core, as many as SQLite's read pool holds. With two cores,
// 10,000 values read on one connection took 1.8-1.9 times the database's
// own join (the request's JSON and the answer around it), shared out
// 1.3-1.5 times (docs/benchmarks.md, session 37).
func lookupWorkers(n int) int {
	if n < minSharedLookup {
		return 1
	}
	return max(1, min(runtime.GOMAXPROCS(0), sqliteReaders))
}

// lookupShares cuts the values of byType, by kind, into at most workers
// shares of the same size but the last. Each share takes the kinds in turn
// where the one before left off, so a lookup runs at most one statement
// more per share than it has kinds, and every value is in exactly one part.
func lookupShares(byType map[ioc.Kind][]string, workers int) [][]lookupPart {
	kinds := slices.Sorted(maps.Keys(byType))
	n := 0
	for _, values := range byType {
		n += len(values)
	}
	size := (n + workers - 1) / max(workers, 1)
	var shares [][]lookupPart
	var share []lookupPart
	room := size
	for _, kind := range kinds {
		values := byType[kind]
		for len(values) > 0 {
			take := min(room, len(values))
			share = append(share, lookupPart{kind: kind, values: values[:take]})
			values, room = values[take:], room-take
			if room == 0 {
				shares, share, room = append(shares, share), nil, size
			}
		}
	}
	if len(share) > 0 {
		shares = append(shares, share)
	}
	return shares
}

// lookUp reads the stored IoCs among one part's values, appended to into.
func (s *Store) lookUp(ctx context.Context, p lookupPart, into []*IoC) ([]*IoC, error) {
	var rows *sql.Rows
	var err error
	if s.Dialect == Postgres {
		rows, err = s.reader().QueryContext(ctx, `SELECT `+lookupColumns+` FROM unnest(?::text[]) AS v(value)
JOIN iocs ON iocs.type = ? AND iocs.value = v.value COLLATE "C"`, pgdialect.Array(p.values), string(p.kind))
	} else {
		b, _ := json.Marshal(p.values)
		// CROSS JOIN keeps SQLite's planner driving from the values.
		rows, err = s.reader().QueryContext(ctx, `SELECT `+lookupColumns+` FROM json_each(?) AS v
CROSS JOIN iocs WHERE iocs.type = ? AND iocs.value = v.value`, string(b), string(p.kind))
	}
	if err == nil {
		into, err = scanLookupRows(rows, into)
	}
	if err != nil {
		return into, fmt.Errorf("store: unable to look up %d %s values: %w", len(p.values), p.kind, err)
	}
	return into, nil
}

// lookupColumns are the columns of IoC, in scanLookupRows' order.
const lookupColumns = `iocs.id, iocs.type, iocs.value, iocs.score, iocs.tags,
iocs.first_seen, iocs.last_seen, iocs.expires_at, iocs.changed_at`

// scanLookupRows appends rows of lookupColumns to into, and closes rows.
// It scans each column into its field directly rather than through bun's
// model scanner: for 10,000 values bun's reflection per column and its
// hooks cost about as much as the database's join.
func scanLookupRows(rows *sql.Rows, into []*IoC) ([]*IoC, error) {
	defer rows.Close()
	var tags []byte
	for rows.Next() {
		c := new(IoC)
		if err := rows.Scan(&c.ID, &c.Type, &c.Value, &c.Score, &tags,
			&c.FirstSeenMicros, &c.LastSeenMicros, &c.ExpiresAtMicros, &c.ChangedAtMicros); err != nil {
			return into, err
		}
		var err error
		if c.Tags, err = decodeTags(tags); err != nil {
			return into, fmt.Errorf("the tags of IoC %d: %w", c.ID, err)
		}
		c.FirstSeen, c.LastSeen, c.ExpiresAt = c.times()
		into = append(into, c)
	}
	return into, rows.Err()
}

// decodeTags reads a tags column: never nil, since the API's tags are a
// non-null list. Most IoCs have none, which skips the JSON decoder.
func decodeTags(b []byte) ([]string, error) {
	if len(b) == 0 || string(b) == "[]" || string(b) == "null" {
		return []string{}, nil
	}
	var tags []string
	if err := json.Unmarshal(b, &tags); err != nil {
		return nil, err
	}
	if tags == nil {
		tags = []string{}
	}
	return tags, nil
}

// SightingsByIoC returns the sightings of the given IoCs, grouped by IoC id,
// each group ordered by score (highest first), feed and source: one query
// per thousand ids, for dataloaders and exports.
func (s *Store) SightingsByIoC(ctx context.Context, iocIDs []int64) (map[int64][]Sighting, error) {
	out := make(map[int64][]Sighting, len(iocIDs))
	for start := 0; start < len(iocIDs); start += lookupChunk {
		chunk := iocIDs[start:min(start+lookupChunk, len(iocIDs))]
		var rows []Sighting
		err := s.reader().NewSelect().Model(&rows).Where("ioc_id IN (?)", bun.In(chunk)).
			OrderExpr("ioc_id, score DESC, feed_id, source").Scan(ctx)
		if err != nil {
			return nil, fmt.Errorf("store: unable to fetch sightings of %d IoCs: %w", len(chunk), err)
		}
		for _, r := range rows {
			out[r.IoCID] = append(out[r.IoCID], r)
		}
	}
	return out, nil
}
