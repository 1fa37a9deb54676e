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
	-- Times of iocs and sightings are unix microseconds (UTC): integers
	-- write and index faster and take a third of the space of timestamps
	-- as text on SQLite (docs/benchmarks.md). store/iocs.go converts them.
	first_seen BIGINT NOT NULL,
	last_seen BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
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
	first_seen BIGINT NOT NULL,
	last_seen BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	PRIMARY KEY (ioc_id, feed_id, source)
) {norowid}`,
			// One index for the sweeper (per feed, by expiry), feed deletion
			// and per-feed counts: each index costs ingestion a B-tree write
			// per sighting. ioc_id lets PostgreSQL count from the index
			// alone; SQLite appends the key (ioc_id, source) anyway.
			`CREATE INDEX sightings_feed_idx ON sightings (feed_id, expires_at, ioc_id)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE sightings`, `DROP TABLE iocs`, `DROP TABLE feed_runs`, `DROP TABLE feeds`)
	})
}
