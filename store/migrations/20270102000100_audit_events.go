package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The audit log: appended to, read, and pruned by age only. No
		// foreign key to users: a record outlives the user it names.
		return exec(ctx, db, `
CREATE TABLE audit_events (
	id {id},
	at {ts} NOT NULL,
	actor_id BIGINT,
	actor TEXT NOT NULL,
	client TEXT NOT NULL DEFAULT '',
	action TEXT NOT NULL,
	target_type TEXT NOT NULL DEFAULT '',
	target_id TEXT NOT NULL DEFAULT '',
	target_name TEXT NOT NULL DEFAULT '',
	fields TEXT NOT NULL DEFAULT '{}'
)`,
			`CREATE INDEX audit_events_at ON audit_events (at)`,
			`CREATE INDEX audit_events_actor ON audit_events (actor, id)`,
			`CREATE INDEX audit_events_action ON audit_events (action, id)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE audit_events`)
	})
}
