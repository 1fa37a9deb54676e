package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
)

// IoCTexts returns the texts of the IoCs among ids that have one (Rule
// IoCs: the IDS signature), by IoC id.
func (s *Store) IoCTexts(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	for chunk := range slices.Chunk(ids, sqliteLookupChunk) {
		var rows []struct {
			IoCID int64  `bun:"ioc_id"`
			Text  string `bun:"text"`
		}
		if err := s.reader().NewSelect().Table("ioc_texts").Column("ioc_id", "text").
			Where("ioc_id IN (?)", bun.In(chunk)).Scan(ctx, &rows); err != nil {
			return nil, fmt.Errorf("store: unable to read the texts of %d indicators: %w", len(chunk), err)
		}
		for _, r := range rows {
			out[r.IoCID] = r.Text
		}
	}
	return out, nil
}
