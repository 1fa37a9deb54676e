package store

import (
	"context"
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
		var rows []IoC
		var err error
		if s.Dialect == Postgres {
			err = s.DB.NewRaw(`SELECT iocs.* FROM unnest(?::text[]) AS v(value)
JOIN iocs ON iocs.type = ? AND iocs.value = v.value COLLATE "C"`, pgdialect.Array(values), string(kind)).Scan(ctx, &rows)
		} else {
			b, _ := json.Marshal(values)
			// CROSS JOIN keeps SQLite's planner driving from the values.
			err = s.DB.NewRaw(`SELECT iocs.* FROM json_each(?) AS v
CROSS JOIN iocs WHERE iocs.type = ? AND iocs.value = v.value`, string(b), string(kind)).Scan(ctx, &rows)
		}
		if err != nil {
			return nil, fmt.Errorf("store: unable to look up %d %s values: %w", len(values), kind, err)
		}
		for i := range rows {
			if rows[i].Tags == nil {
				rows[i].Tags = []string{}
			}
			found[IoCKey{Type: rows[i].Type, Value: rows[i].Value}] = &rows[i]
		}
	}
	return found, nil
}

// SightingsByIoC returns the sightings of the given IoCs, grouped by IoC id,
// each group ordered by score (highest first), feed and source: one query
// per thousand ids, for dataloaders and exports.
func (s *Store) SightingsByIoC(ctx context.Context, iocIDs []int64) (map[int64][]Sighting, error) {
	out := make(map[int64][]Sighting, len(iocIDs))
	for start := 0; start < len(iocIDs); start += lookupChunk {
		chunk := iocIDs[start:min(start+lookupChunk, len(iocIDs))]
		var rows []Sighting
		err := s.DB.NewSelect().Model(&rows).Where("ioc_id IN (?)", bun.In(chunk)).
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
