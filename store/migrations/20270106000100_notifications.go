package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// Notifications (issue 28). Times that are compared (due, leases,
		// expiry) are unix microseconds, like the IoCs': integers compare
		// the same on both databases whatever the text form of a timestamp.
		return exec(ctx, db, `
CREATE TABLE notify_channels (
	id {id},
	-- NULL: a root channel.
	tenant_id TEXT REFERENCES tenants (id) ON DELETE CASCADE,
	name TEXT NOT NULL,
	kind TEXT NOT NULL,
	target TEXT NOT NULL,
	secret {blob},
	events TEXT NOT NULL,
	created_at BIGINT NOT NULL
)`,
			`CREATE INDEX notify_channels_tenant ON notify_channels (tenant_id, id)`, `
CREATE TABLE notify_outbox (
	id {id},
	channel_id BIGINT NOT NULL REFERENCES notify_channels (id) ON DELETE CASCADE,
	delivery_id TEXT NOT NULL UNIQUE,
	event TEXT NOT NULL,
	body TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	next_at BIGINT NOT NULL,
	attempts INTEGER NOT NULL DEFAULT 0,
	lease_until BIGINT,
	lease_token TEXT NOT NULL DEFAULT ''
)`,
			`CREATE INDEX notify_outbox_due ON notify_outbox (next_at, id)`, `
CREATE TABLE notify_deliveries (
	id {id},
	channel_id BIGINT NOT NULL REFERENCES notify_channels (id) ON DELETE CASCADE,
	delivery_id TEXT NOT NULL,
	event TEXT NOT NULL,
	at BIGINT NOT NULL,
	attempt INTEGER NOT NULL,
	status TEXT NOT NULL,
	http_status INTEGER NOT NULL DEFAULT 0,
	latency_ms BIGINT NOT NULL DEFAULT 0,
	error TEXT NOT NULL DEFAULT ''
)`,
			`CREATE INDEX notify_deliveries_channel ON notify_deliveries (channel_id, id)`, `
CREATE TABLE feed_health (
	feed_id BIGINT PRIMARY KEY REFERENCES feeds (id) ON DELETE CASCADE,
	state TEXT NOT NULL,
	-- NULL: the default, three times the feed's polling frequency.
	stale_after_seconds BIGINT,
	changed_at BIGINT NOT NULL
)`, `
CREATE TABLE tenant_assets (
	id {id},
	tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
	kind TEXT NOT NULL,
	value {ctext} NOT NULL,
	created_at BIGINT NOT NULL,
	UNIQUE (tenant_id, value)
)`, `
CREATE TABLE asset_hits (
	id {id},
	tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
	asset_id BIGINT NOT NULL REFERENCES tenant_assets (id) ON DELETE CASCADE,
	asset TEXT NOT NULL,
	ioc_type TEXT NOT NULL,
	ioc_value TEXT NOT NULL,
	score INTEGER NOT NULL,
	tags TEXT NOT NULL,
	feed_id BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
	feed_name TEXT NOT NULL,
	at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	UNIQUE (asset_id, ioc_type, ioc_value, feed_id)
)`,
			`CREATE INDEX asset_hits_tenant ON asset_hits (tenant_id, id)`,
			`CREATE INDEX asset_hits_feed ON asset_hits (feed_id)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return exec(ctx, db, `DROP TABLE asset_hits`, `DROP TABLE tenant_assets`, `DROP TABLE feed_health`,
			`DROP TABLE notify_deliveries`, `DROP TABLE notify_outbox`, `DROP TABLE notify_channels`)
	})
}
