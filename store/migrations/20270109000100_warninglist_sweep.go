package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The version and entry count of a built-in list whose removal of
		// stored IoCs last finished: a start compares them with the lists
		// it ships and sweeps only a dropping list that changed, instead of
		// scanning every stored IoC against the allowlist at every start
		// (issue 29, point 3). NULL: never swept (an existing database
		// sweeps each dropping built-in list once after the upgrade).
		return exec(ctx, db,
			`ALTER TABLE warninglists ADD COLUMN swept_version BIGINT`,
			`ALTER TABLE warninglists ADD COLUMN swept_entries BIGINT`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db,
			`ALTER TABLE warninglists DROP COLUMN swept_entries`,
			`ALTER TABLE warninglists DROP COLUMN swept_version`)
	})
}
