package store

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// plannedTables are the tables whose statistics PostgreSQL plans the IoC
// reads by.
var plannedTables = []string{"iocs", "sighting_rows", "ioc_tag_keys", "ioc_value_keys"}

// RefreshStatistics analyses, on PostgreSQL, those of the IoC tables that
// have never been analysed or of which a tenth changed since, and returns
// their names. Autovacuum does so within a minute or two, but a service
// started seconds after a large ingest planned its first pages on the
// statistics of a nearly empty table: at 1,000,000 IoCs just built, five
// first pages took 58-325 ms that took 3-10 once analysed. ANALYZE reads a
// sample of each table (30,000 rows), not the table: about a second at
// 10,000,000 IoCs. SQLite has no autovacuum to wait for, and its reads
// name the indexes they need (INDEXED BY, CROSS JOIN): nothing to do there.
func (s *Store) RefreshStatistics(ctx context.Context) ([]string, error) {
	if s.Dialect != Postgres {
		return nil, nil
	}
	var stale []string
	if err := s.reader().NewRaw(`SELECT relname FROM pg_stat_user_tables WHERE relname IN (?)
AND (last_analyze IS NULL AND last_autoanalyze IS NULL OR n_mod_since_analyze > n_live_tup / 10)
ORDER BY relname`, bun.In(plannedTables)).Scan(ctx, &stale); err != nil {
		return nil, fmt.Errorf("store: unable to read the tables' statistics: %w", err)
	}
	for _, table := range stale {
		if _, err := s.DB.ExecContext(ctx, "ANALYZE "+table); err != nil {
			return nil, fmt.Errorf("store: unable to analyse %s: %w", table, err)
		}
	}
	return stale, nil
}
