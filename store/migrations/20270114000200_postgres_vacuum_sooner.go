package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// postgresChurnTables are the tables whose rows the sweeper, the feeds'
// withdrawals and the key cleaner delete by the hundred thousand.
var postgresChurnTables = []string{"iocs", "sighting_rows", "ioc_tag_keys", "ioc_value_keys"}

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.PG {
			return nil
		}
		// Autovacuum comes by after 2 % of a table changed, not 20 %: a
		// sweep of 1,000,000 IoCs at 10,000,000 never woke it, and the
		// dead entries it left at the end of iocs' primary key made the
		// planner read 2,900 index pages for the end of its range in every
		// query that compares an id with a recent one (95 ms of planning
		// in each search) and max(id) take 105 ms, until a vacuum (63 s,
		// throttled as autovacuum is). Analysing as often keeps the
		// histograms' ends near the newest ids and stamps.
		var stmts []string
		for _, table := range postgresChurnTables {
			stmts = append(stmts, `ALTER TABLE `+table+` SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)`)
		}
		return exec(ctx, db, stmts...)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.PG {
			return nil
		}
		var stmts []string
		for _, table := range postgresChurnTables {
			stmts = append(stmts, `ALTER TABLE `+table+` RESET (autovacuum_vacuum_scale_factor, autovacuum_analyze_scale_factor)`)
		}
		return exec(ctx, db, stmts...)
	})
}
