package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

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
// absent from the map. Each kind is one set-based query: the values go as
// one JSON (SQLite) or array (PostgreSQL) parameter, joined to iocs by its
// unique index, so 10,000 values cost the database's own join.
func (s *Store) IoCsByKeys(ctx context.Context, keys []IoCKey) (map[IoCKey]*IoC, error) {
	byType := map[ioc.Kind][]string{}
	seen := make(map[IoCKey]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			byType[k.Type] = append(byType[k.Type], k.Value)
		}
	}
	found := make(map[IoCKey]*IoC, len(keys))
	for kind, values := range byType {
		var rows *sql.Rows
		var err error
		if s.Dialect == Postgres {
			rows, err = s.reader().QueryContext(ctx, `SELECT `+lookupColumns+` FROM unnest(?::text[]) AS v(value)
JOIN iocs ON iocs.type = ? AND iocs.value = v.value COLLATE "C"`, pgdialect.Array(values), string(kind))
		} else {
			b, _ := json.Marshal(values)
			// CROSS JOIN keeps SQLite's planner driving from the values.
			rows, err = s.reader().QueryContext(ctx, `SELECT `+lookupColumns+` FROM json_each(?) AS v
CROSS JOIN iocs WHERE iocs.type = ? AND iocs.value = v.value`, string(b), string(kind))
		}
		if err == nil {
			err = scanLookupRows(rows, found)
		}
		if err != nil {
			return nil, fmt.Errorf("store: unable to look up %d %s values: %w", len(values), kind, err)
		}
	}
	return found, nil
}

// lookupColumns are the columns of IoC, in scanLookupRows' order.
const lookupColumns = `iocs.id, iocs.type, iocs.value, iocs.score, iocs.tags,
iocs.first_seen, iocs.last_seen, iocs.expires_at, iocs.changed_at`

// scanLookupRows reads rows of lookupColumns into found, and closes rows.
// It scans each column into its field directly rather than through bun's
// model scanner: for 10,000 values bun's reflection per column and its
// hooks cost about as much as the database's join.
func scanLookupRows(rows *sql.Rows, found map[IoCKey]*IoC) error {
	defer rows.Close()
	var tags []byte
	for rows.Next() {
		c := new(IoC)
		if err := rows.Scan(&c.ID, &c.Type, &c.Value, &c.Score, &tags,
			&c.FirstSeenMicros, &c.LastSeenMicros, &c.ExpiresAtMicros, &c.ChangedAtMicros); err != nil {
			return err
		}
		var err error
		if c.Tags, err = decodeTags(tags); err != nil {
			return fmt.Errorf("the tags of IoC %d: %w", c.ID, err)
		}
		c.FirstSeen, c.LastSeen, c.ExpiresAt = c.times()
		found[IoCKey{Type: c.Type, Value: c.Value}] = c
	}
	return rows.Err()
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
