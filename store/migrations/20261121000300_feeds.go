package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `
CREATE TABLE feeds (
	id {id},
	name TEXT NOT NULL UNIQUE,
	type TEXT NOT NULL CHECK (type IN ('builtin', 'custom', 'premium')),
	kind TEXT NOT NULL DEFAULT '',
	category TEXT NOT NULL,
	enabled BOOLEAN NOT NULL,
	status_message TEXT NOT NULL,
	polling_frequency INTEGER NOT NULL,
	retention_period INTEGER NOT NULL,
	backfill_days INTEGER NOT NULL DEFAULT 0,
	description TEXT NOT NULL DEFAULT '',
	collection_url TEXT NOT NULL DEFAULT '',
	username TEXT NOT NULL DEFAULT '',
	secret {blob},
	cursor TEXT NOT NULL DEFAULT '',
	last_ingestion {ts},
	last_run_at {ts},
	disabled_at {ts},
	created_at {ts} NOT NULL,
	updated_at {ts} NOT NULL
)`, `
CREATE TABLE feed_runs (
	id {id},
	feed_id BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
	started_at {ts} NOT NULL,
	ended_at {ts},
	fetched BIGINT NOT NULL DEFAULT 0,
	stored BIGINT NOT NULL DEFAULT 0,
	rejected BIGINT NOT NULL DEFAULT 0,
	rejections {json},
	error_kind TEXT NOT NULL DEFAULT '',
	error_detail TEXT NOT NULL DEFAULT '',
	note TEXT NOT NULL DEFAULT ''
)`,
			`CREATE INDEX feed_runs_feed_idx ON feed_runs (feed_id, started_at)`, `
CREATE TABLE iocs (
	id {id},
	type TEXT NOT NULL,
	value {ctext} NOT NULL,
	score INTEGER NOT NULL DEFAULT 0,
	tags {json},
	first_seen {ts} NOT NULL,
	last_seen {ts} NOT NULL,
	expires_at {ts} NOT NULL,
	UNIQUE (type, value)
)`,
			// Sweeper, expiry filters and the EXPIRATION_DATE order (keyset on id).
			`CREATE INDEX iocs_expires_idx ON iocs (expires_at, id)`, `
CREATE TABLE sightings (
	-- No foreign key to iocs: its trigger doubled the cost of an insert on
	-- PostgreSQL, and store/iocs.go alone writes both tables, under one lock.
	ioc_id BIGINT NOT NULL,
	feed_id BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
	source TEXT NOT NULL,
	score INTEGER NOT NULL,
	tags {json},
	first_seen {ts} NOT NULL,
	last_seen {ts} NOT NULL,
	expires_at {ts} NOT NULL,
	PRIMARY KEY (ioc_id, feed_id, source)
) {norowid}`,
			// Feed deletion, per-feed counts and the feedId filter.
			`CREATE INDEX sightings_feed_idx ON sightings (feed_id, ioc_id)`,
			`CREATE INDEX sightings_expires_idx ON sightings (expires_at)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE sightings`, `DROP TABLE iocs`, `DROP TABLE feed_runs`, `DROP TABLE feeds`)
	})
}
