package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// A list turned to drop has the stored IoCs it matches removed in
		// the background; the flag stays set until that removal finished,
		// so that one interrupted by a stop resumes at the next start and
		// the Allowlist page can say "removing…" (issue 27, follow-up).
		return exec(ctx, db, `ALTER TABLE warninglists ADD COLUMN removal_pending BOOLEAN NOT NULL DEFAULT false`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `ALTER TABLE warninglists DROP COLUMN removal_pending`)
	})
}
