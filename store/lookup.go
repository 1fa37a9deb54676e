package store

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
)

// IoCKey is the natural key of an IoC.
type IoCKey struct {
	Type  ioc.Kind
	Value string // normalised
}

// lookupChunk bounds the values of one IN list, well under both dialects'
// limits on bound parameters.
const lookupChunk = 1000

// IoCsByKeys returns the stored IoCs among keys, by key. Keys not stored are
// absent from the map.
func (s *Store) IoCsByKeys(ctx context.Context, keys []IoCKey) (map[IoCKey]*IoC, error) {
	byType := map[ioc.Kind][]string{}
	for _, k := range keys {
		byType[k.Type] = append(byType[k.Type], k.Value)
	}
	found := make(map[IoCKey]*IoC, len(keys))
	for kind, values := range byType {
		for start := 0; start < len(values); start += lookupChunk {
			chunk := values[start:min(start+lookupChunk, len(values))]
			var rows []IoC
			err := s.DB.NewSelect().Model(&rows).
				Where("type = ?", kind).
				Where("value IN (?)", bun.In(chunk)).
				Scan(ctx)
			if err != nil {
				return nil, fmt.Errorf("store: unable to look up %d %s values: %w", len(chunk), kind, err)
			}
			for i := range rows {
				found[IoCKey{Type: rows[i].Type, Value: rows[i].Value}] = &rows[i]
			}
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
