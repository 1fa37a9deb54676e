package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/uptrace/bun"
)

// IoCRow is one row of StreamIoCs: the IoC, and its sources when asked.
type IoCRow struct {
	IoC
	// Sources is "<feed name>/<source>" of each sighting, joined by ";",
	// highest score first (then feed id, source); set with WithSources.
	Sources string
}

// StreamColumns says what StreamIoCs reads of each IoC.
type StreamColumns struct {
	// ValueOnly reads the value alone (Type and Value are set), for plain
	// lists: the cheapest rows the databases can give.
	ValueOnly bool
	// WithSources also reads each IoC's sources, in the same query.
	WithSources bool
	// Extra are further SQL expressions over iocs selected after the
	// IoC's columns, scanned into the dest ExtraDest returns for each row.
	Extra     []string
	ExtraDest func(*IoCRow) []any
}

// StreamIoCs calls fn with each IoC matching f, in order o, reading them
// with one query whose rows are never all in memory: exports use it at the
// database's own pace. The query runs on the exports' own connections
// (SetExportConns), never on those of pages and lookups, since fn writes to
// a client that may stop reading. fn's row is reused: it must not keep it.
// An error of fn ends the stream and is returned.
func (s *Store) StreamIoCs(ctx context.Context, f IoCFilter, o IoCOrder, cols StreamColumns, fn func(*IoCRow) error) error {
	switch o.Field {
	case "":
		o.Field = IoCOrderID
	case IoCOrderID, IoCOrderValue, IoCOrderType, IoCOrderScore, IoCOrderFirstSeen, IoCOrderLastSeen, IoCOrderExpiresAt:
	default:
		return Invalid("orderBy", "unknown order %q", o.Field)
	}
	if err := s.sizeFeedFilter(ctx, &f); err != nil {
		return err
	}
	q, ok, err := s.applyIoCFilter(s.exporter().NewSelect().Model((*IoC)(nil)), f)
	if err != nil || !ok {
		return err
	}
	q = q.ExcludeColumn("*")
	if cols.ValueOnly {
		q = q.ColumnExpr("iocs.type, iocs.value")
	} else {
		q = q.ColumnExpr("iocs.id, iocs.type, iocs.value, iocs.score, iocs.tags, iocs.first_seen, iocs.last_seen, iocs.expires_at")
	}
	if cols.WithSources {
		q = q.ColumnExpr(s.sourcesExpr())
	}
	for _, e := range cols.Extra {
		q = q.ColumnExpr(e)
	}
	dir := "ASC"
	if o.Desc {
		dir = "DESC"
	}
	if o.Field != IoCOrderID {
		q = q.OrderExpr("? "+dir, bun.Ident("iocs."+string(o.Field)))
	}
	q = q.OrderExpr("iocs.id " + dir)
	rows, err := q.Rows(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to stream indicators: %w", err)
	}
	defer rows.Close()
	var (
		row     IoCRow
		tags    []byte
		sources *string
		dest    []any
	)
	for rows.Next() {
		if cols.ValueOnly {
			dest = append(dest[:0], &row.Type, &row.Value)
		} else {
			dest = append(dest[:0], &row.ID, &row.Type, &row.Value, &row.Score, &tags,
				&row.FirstSeenMicros, &row.LastSeenMicros, &row.ExpiresAtMicros)
		}
		if cols.WithSources {
			dest = append(dest, &sources)
		}
		if cols.ExtraDest != nil {
			dest = append(dest, cols.ExtraDest(&row)...)
		}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("store: unable to read a streamed indicator: %w", err)
		}
		if !cols.ValueOnly {
			row.Tags = row.Tags[:0]
			if len(tags) > 0 {
				if err := json.Unmarshal(tags, &row.Tags); err != nil {
					return fmt.Errorf("store: unable to read the tags of indicator %d: %w", row.ID, err)
				}
			}
			row.FirstSeen, row.LastSeen, row.ExpiresAt = row.times()
		}
		row.Sources = ""
		if sources != nil {
			row.Sources = *sources
		}
		if err := fn(&row); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: unable to stream indicators: %w", err)
	}
	return nil
}

// sourcesExpr is an IoC's sources as one string, in the order of
// SightingsByIoC: its inline sighting's, or those of its rows.
func (s *Store) sourcesExpr() string {
	inline := `(SELECT f.name || '/' || iocs.source FROM feeds f WHERE f.id = iocs.feed_id)`
	rows := `(SELECT string_agg(f.name || '/' || sg.source, ';' ORDER BY sg.score DESC, sg.feed_id, sg.source)
	FROM sighting_rows sg JOIN feeds f ON f.id = sg.feed_id WHERE sg.ioc_id = iocs.id)`
	if s.Dialect == SQLite {
		// SQLite's group_concat follows the order of its subquery's rows.
		rows = `(SELECT group_concat(x, ';') FROM (SELECT f.name || '/' || sg.source AS x
	FROM sighting_rows sg JOIN feeds f ON f.id = sg.feed_id WHERE sg.ioc_id = iocs.id
	ORDER BY sg.score DESC, sg.feed_id, sg.source))`
	}
	return `CASE WHEN iocs.feed_id IS NULL THEN ` + rows + ` ELSE ` + inline + ` END AS sources`
}
