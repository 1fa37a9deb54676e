package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// The value keys are complete by id, not by change stamp: a value
		// never changes, so only new IoCs need one, and new IoCs take ids
		// in commit order (under the IoC write lock). value_id is the id up
		// to which every IoC has its value key. Until now the value keys
		// were complete up to ioc_keys_state.stamp, so every IoC below the
		// lowest id changed since has one.
		return exec(ctx, db,
			`ALTER TABLE ioc_keys_state ADD COLUMN value_id BIGINT NOT NULL DEFAULT 0`,
			`UPDATE ioc_keys_state SET value_id = coalesce(
	(SELECT min(id) FROM iocs WHERE changed_at > ioc_keys_state.stamp),
	(SELECT max(id) FROM iocs) + 1, 1) - 1 WHERE id = 1`)
	}, func(ctx context.Context, db *bun.DB) error {
		// The stamp's value keys then may lag it: start the stamp over
		// from the IoCs without one (the other keys' inserts are
		// idempotent).
		return exec(ctx, db,
			`UPDATE ioc_keys_state SET stamp = coalesce((SELECT min(changed_at) - 1 FROM iocs WHERE id > ioc_keys_state.value_id AND changed_at <= ioc_keys_state.stamp), stamp) WHERE id = 1`,
			`ALTER TABLE ioc_keys_state DROP COLUMN value_id`)
	})
}
