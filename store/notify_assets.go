package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// TenantAsset is one thing a tenant watches: an IP address, a CIDR range,
// a domain (covering its subdomains) or a URL prefix. Kind and Value are
// as allowlist.ParseEntry returns them; the store does not interpret them.
type TenantAsset struct {
	bun.BaseModel `bun:"table:tenant_assets"`

	ID        int64  `bun:"id,pk,autoincrement"`
	TenantID  string `bun:"tenant_id,notnull"`
	Kind      string `bun:"kind,notnull"`
	Value     string `bun:"value,notnull"`
	CreatedAt int64  `bun:"created_at,notnull"`
}

// Created is when the asset was added.
func (a *TenantAsset) Created() time.Time { return fromMicros(a.CreatedAt) }

// assetChunk is how many assets one statement inserts or deletes.
const assetChunk = 500

// AddTenantAssets adds assets (of one tenant, each value once) that the
// tenant does not watch yet, unless that would make more than max, and
// returns those it added (with their ids). ErrNotFound when the tenant
// does not exist.
func (s *Store) AddTenantAssets(ctx context.Context, tenantID string, assets []TenantAsset, max int, now time.Time) ([]TenantAsset, error) {
	var added []TenantAsset
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		added = nil
		lock := ""
		if s.Dialect == Postgres {
			lock = " FOR UPDATE"
		}
		var id string
		if err := tx.NewRaw("SELECT id FROM tenants WHERE id = ?"+lock, tenantID).Scan(ctx, &id); err != nil {
			if err == sql.ErrNoRows {
				return fmt.Errorf("store: tenant %s: %w", tenantID, ErrNotFound)
			}
			return err
		}
		n, err := tx.NewSelect().Model((*TenantAsset)(nil)).Where("tenant_id = ?", tenantID).Count(ctx)
		if err != nil {
			return err
		}
		// Values watched already are skipped by the unique key; RETURNING
		// names the rows inserted.
		var fresh []TenantAsset
		for start := 0; start < len(assets); start += assetChunk {
			chunk := make([]TenantAsset, 0, assetChunk)
			for _, a := range assets[start:min(start+assetChunk, len(assets))] {
				a.ID, a.TenantID, a.CreatedAt = 0, tenantID, micros(now)
				chunk = append(chunk, a)
			}
			var inserted []TenantAsset
			if _, err := tx.NewInsert().Model(&chunk).On("CONFLICT (tenant_id, value) DO NOTHING").
				Returning("id, tenant_id, kind, value, created_at").Exec(ctx, &inserted); err != nil {
				return err
			}
			fresh = append(fresh, inserted...)
			if n+int64(len(fresh)) > int64(max) {
				return Invalid("values", "a tenant watches at most %d assets (it has %d)", max, n)
			}
		}
		added = fresh
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: unable to add assets: %w", err)
	}
	return added, nil
}

// DeleteTenantAssets deletes the tenant's assets of these values (and
// their hits) and returns how many it deleted.
func (s *Store) DeleteTenantAssets(ctx context.Context, tenantID string, values []string) (int64, error) {
	var total int64
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		total = 0
		for start := 0; start < len(values); start += assetChunk {
			chunk := values[start:min(start+assetChunk, len(values))]
			if _, err := tx.ExecContext(ctx, `DELETE FROM asset_hits WHERE asset_id IN (
SELECT id FROM tenant_assets WHERE tenant_id = ? AND value IN (?))`, tenantID, bun.In(chunk)); err != nil {
				return err
			}
			r, err := tx.ExecContext(ctx, "DELETE FROM tenant_assets WHERE tenant_id = ? AND value IN (?)", tenantID, bun.In(chunk))
			if err != nil {
				return err
			}
			n, _ := r.RowsAffected()
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: unable to delete assets: %w", err)
	}
	return total, nil
}

// TenantAssets returns a page of the tenant's assets by id, after the
// asset after (0: from the first).
func (s *Store) TenantAssets(ctx context.Context, tenantID string, first int, after int64) ([]TenantAsset, error) {
	var out []TenantAsset
	q := s.reader().NewSelect().Model(&out).Where("tenant_id = ?", tenantID).Order("id").Limit(int64(first))
	if after > 0 {
		q = q.Where("id > ?", after)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read assets: %w", err)
	}
	return out, nil
}

// CountTenantAssets counts the tenant's assets.
func (s *Store) CountTenantAssets(ctx context.Context, tenantID string) (int64, error) {
	return s.reader().NewSelect().Model((*TenantAsset)(nil)).Where("tenant_id = ?", tenantID).Count(ctx)
}

// EachTenantAsset calls fn with every asset of every tenant, by id, a page
// at a time.
func (s *Store) EachTenantAsset(ctx context.Context, fn func(*TenantAsset)) error {
	var after int64
	for {
		var page []TenantAsset
		if err := s.reader().NewSelect().Model(&page).Where("id > ?", after).Order("id").Limit(20000).Scan(ctx); err != nil {
			return fmt.Errorf("store: unable to read assets: %w", err)
		}
		for i := range page {
			fn(&page[i])
		}
		if len(page) < 20000 {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// IoCRef is a stored IoC's id, type and value.
type IoCRef struct {
	ID    int64  `bun:"id"`
	Type  string `bun:"type"`
	Value string `bun:"value"`
}

// ScanIoCs returns up to limit IoCs of the types, by id after after.
func (s *Store) ScanIoCs(ctx context.Context, types []string, after int64, limit int) ([]IoCRef, error) {
	var out []IoCRef
	err := s.reader().NewSelect().Table("iocs").Column("id", "type", "value").
		Where("type IN (?)", bun.In(types)).Where("id > ?", after).Order("id").Limit(int64(limit)).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("store: unable to read indicators: %w", err)
	}
	return out, nil
}

// SightingRef is a live sighting of an IoC: which feed, and what it said.
type SightingRef struct {
	IoCID     int64
	FeedID    int64
	FeedName  string
	Score     int
	Tags      []string
	ExpiresAt time.Time
}

// LiveSightings returns the sightings of the IoCs ids that expire after
// now.
func (s *Store) LiveSightings(ctx context.Context, ids []int64, now time.Time) ([]SightingRef, error) {
	var rows []struct {
		IoCID     int64          `bun:"ioc_id"`
		FeedID    int64          `bun:"feed_id"`
		FeedName  string         `bun:"name"`
		Score     int            `bun:"score"`
		Tags      sql.NullString `bun:"tags"`
		ExpiresAt int64          `bun:"expires_at"`
	}
	err := s.reader().NewRaw(`SELECT s.ioc_id, s.feed_id, f.name, s.score, s.tags, s.expires_at
FROM sightings s JOIN feeds f ON f.id = s.feed_id WHERE s.ioc_id IN (?) AND s.expires_at > ?`, bun.In(ids), micros(now)).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("store: unable to read sightings: %w", err)
	}
	out := make([]SightingRef, len(rows))
	for i, r := range rows {
		out[i] = SightingRef{IoCID: r.IoCID, FeedID: r.FeedID, FeedName: r.FeedName, Score: r.Score, ExpiresAt: fromMicros(r.ExpiresAt)}
		if r.Tags.Valid && r.Tags.String != "" {
			_ = json.Unmarshal([]byte(r.Tags.String), &out[i].Tags)
		}
	}
	return out, nil
}

// AssetHit is a stored IoC covering a tenant's asset, as one feed reported
// it.
type AssetHit struct {
	bun.BaseModel `bun:"table:asset_hits"`

	ID        int64    `bun:"id,pk,autoincrement"`
	TenantID  string   `bun:"tenant_id,notnull"`
	AssetID   int64    `bun:"asset_id,notnull"`
	Asset     string   `bun:"asset,notnull"`
	IoCType   string   `bun:"ioc_type,notnull"`
	IoCValue  string   `bun:"ioc_value,notnull"`
	Score     int      `bun:"score,notnull"`
	Tags      []string `bun:"tags,notnull,type:text,json_use_number"`
	FeedID    int64    `bun:"feed_id,notnull"`
	FeedName  string   `bun:"feed_name,notnull"`
	At        int64    `bun:"at,notnull"`
	ExpiresAt int64    `bun:"expires_at,notnull"`
}

// Time is when the hit was recorded.
func (h *AssetHit) Time() time.Time { return fromMicros(h.At) }

// Expires is when the IoC's sighting expires.
func (h *AssetHit) Expires() time.Time { return fromMicros(h.ExpiresAt) }

// NewAssetHit fills a hit's times.
func NewAssetHit(h AssetHit, at, expires time.Time) AssetHit {
	h.At, h.ExpiresAt = micros(at), micros(expires)
	return h
}

// RecordAssetHits stores hits, once per (asset, IoC, feed) until the IoC
// expires: a hit stored already and not expired only has its expiry
// moved; the others are stored and, in the same transaction, notify
// enqueues their notification. It returns the hits it stored anew (a
// hit whose asset was deleted meanwhile is dropped).
func (s *Store) RecordAssetHits(ctx context.Context, hits []AssetHit, now time.Time, notify func(*AssetHit) Notification) ([]AssetHit, error) {
	var fresh []AssetHit
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		fresh, err = s.recordAssetHits(ctx, tx, hits, now, notify)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: unable to record asset hits: %w", err)
	}
	return fresh, nil
}

// recordAssetHits is RecordAssetHits in the transaction tx. A fresh hit
// costs two statements (the look for a stored one, the insert): which
// assets and feeds still exist and the channels to notify are read once
// for all the hits, and their notifications are written together. A
// batch's hits are drained in one transaction before any is sent, so each
// statement a hit costs adds to every hit's delay (issue 28: within 5 s
// of the batch's commit).
func (s *Store) recordAssetHits(ctx context.Context, tx bun.Tx, hits []AssetHit, now time.Time, notify func(*AssetHit) Notification) ([]AssetHit, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	assetIDs, feedIDs, tenants := map[int64]bool{}, map[int64]bool{}, map[string]bool{}
	for _, h := range hits {
		assetIDs[h.AssetID], feedIDs[h.FeedID] = true, true
		if h.TenantID != "" {
			tenants[h.TenantID] = true
		}
	}
	// The asset or the feed may have gone meanwhile: a failed insert would
	// end a PostgreSQL transaction. One deleted after this read fails the
	// transaction, which is tried again (a drain) or reported (a
	// back-match), as one deleted between a per-hit check and its insert
	// did.
	liveAssets, err := existing(ctx, tx, "tenant_assets", assetIDs)
	if err != nil {
		return nil, err
	}
	liveFeeds, err := existing(ctx, tx, "feeds", feedIDs)
	if err != nil {
		return nil, err
	}
	chans, err := hitChannels(ctx, tx, slices.Collect(maps.Keys(tenants)))
	if err != nil {
		return nil, err
	}
	// In the order of the hits' key: two instances recording overlapping
	// hits lock their keys in one order, so that one waits for the other
	// instead of each holding a key the other waits for (two racing drains
	// of one test, each taking the others' leftovers, once ended in
	// PostgreSQL's deadlock error).
	hits = slices.SortedFunc(slices.Values(hits), func(a, b AssetHit) int {
		return cmp.Or(cmp.Compare(a.AssetID, b.AssetID), cmp.Compare(a.IoCType, b.IoCType),
			cmp.Compare(a.IoCValue, b.IoCValue), cmp.Compare(a.FeedID, b.FeedID))
	})
	var fresh []AssetHit
	var outbox []OutboxItem
	for _, h := range hits {
		var old AssetHit
		err := tx.NewSelect().Model(&old).Where("asset_id = ? AND ioc_type = ? AND ioc_value = ? AND feed_id = ?",
			h.AssetID, h.IoCType, h.IoCValue, h.FeedID).Scan(ctx)
		switch {
		case err == nil && old.ExpiresAt > micros(now):
			if h.ExpiresAt > old.ExpiresAt {
				if _, err := tx.NewUpdate().Model((*AssetHit)(nil)).Set("expires_at = ?", h.ExpiresAt).
					Where("id = ?", old.ID).Exec(ctx); err != nil {
					return nil, err
				}
			}
			continue
		case err == nil:
			if _, err := tx.ExecContext(ctx, "DELETE FROM asset_hits WHERE id = ?", old.ID); err != nil {
				return nil, err
			}
		case err != sql.ErrNoRows:
			return nil, err
		}
		if !liveAssets[h.AssetID] || !liveFeeds[h.FeedID] {
			continue
		}
		h.ID = 0
		if h.Tags == nil {
			h.Tags = []string{}
		}
		// Another transaction recording the same hit at once (two
		// instances matching the same IoC from two batches) inserts it
		// first: this one then records and notifies nothing.
		r, err := tx.NewInsert().Model(&h).On("CONFLICT (asset_id, ioc_type, ioc_value, feed_id) DO NOTHING").
			Returning("id").Exec(ctx)
		if err != nil {
			return nil, err
		}
		if n, _ := r.RowsAffected(); n == 0 || h.ID == 0 {
			continue
		}
		// As Enqueue: root's channels and the hit's tenant's, by id.
		n := notify(&h)
		for i := range chans {
			c := &chans[i]
			if !c.receives(n) {
				continue
			}
			item, err := newOutboxItem(c.ID, n, now)
			if err != nil {
				return nil, err
			}
			outbox = append(outbox, *item)
		}
		fresh = append(fresh, h)
	}
	for chunk := range slices.Chunk(outbox, assetChunk) {
		if _, err := tx.NewInsert().Model(&chunk).Exec(ctx); err != nil {
			return nil, fmt.Errorf("store: unable to write to the outbox: %w", err)
		}
	}
	return fresh, nil
}

// existing returns which of ids are rows of table.
func existing(ctx context.Context, tx bun.Tx, table string, ids map[int64]bool) (map[int64]bool, error) {
	out := make(map[int64]bool, len(ids))
	for chunk := range slices.Chunk(slices.Collect(maps.Keys(ids)), assetChunk) {
		var found []int64
		if err := tx.NewRaw("SELECT id FROM "+table+" WHERE id IN (?)", bun.In(chunk)).Scan(ctx, &found); err != nil {
			return nil, err
		}
		for _, id := range found {
			out[id] = true
		}
	}
	return out, nil
}

// hitChannels returns root's channels and those of tenants, by id.
func hitChannels(ctx context.Context, tx bun.Tx, tenants []string) ([]NotifyChannel, error) {
	var out []NotifyChannel
	if err := tx.NewSelect().Model(&out).Where("tenant_id IS NULL").Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read channels: %w", err)
	}
	for chunk := range slices.Chunk(tenants, assetChunk) {
		var page []NotifyChannel
		if err := tx.NewSelect().Model(&page).Where("tenant_id IN (?)", bun.In(chunk)).Scan(ctx); err != nil {
			return nil, fmt.Errorf("store: unable to read channels: %w", err)
		}
		out = append(out, page...)
	}
	slices.SortFunc(out, func(a, b NotifyChannel) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// PendingAssetSighting is an indicator a batch stored that covers a
// tenant's asset (Batch.Watched), waiting to be matched into hits.
type PendingAssetSighting struct {
	bun.BaseModel `bun:"table:asset_sightings_pending"`

	ID        int64    `bun:"id,pk,autoincrement"`
	FeedID    int64    `bun:"feed_id,notnull"`
	Kind      string   `bun:"kind,notnull"`
	Value     string   `bun:"value,notnull"`
	Score     int      `bun:"score,notnull"`
	Tags      []string `bun:"tags,notnull,type:text,json_use_number"`
	At        int64    `bun:"at,notnull"`
	ExpiresAt int64    `bun:"expires_at,notnull"`
}

// AssetMatch is how DrainAssetSightings turns pending sightings into hits:
// Candidates names the assets that may cover a sighting (an index's
// answer, hash collisions included), Covers decides exactly, Notify makes
// a fresh hit's notification.
type AssetMatch struct {
	Candidates func(p *PendingAssetSighting) []int64
	Covers     func(asset *TenantAsset, iocType, iocValue string) bool
	Notify     func(*AssetHit) Notification
}

// DrainAssetSightings takes up to limit pending asset sightings and, in
// one transaction, records their hits (as RecordAssetHits does, with their
// notifications) and deletes them: a sighting is matched exactly once,
// whichever instance drains it and whenever it crashes. On PostgreSQL,
// instances draining at once skip each other's rows (FOR UPDATE SKIP
// LOCKED); on SQLite the write lock serialises them. It returns how many
// sightings it drained and the hits it recorded anew.
func (s *Store) DrainAssetSightings(ctx context.Context, limit int, now time.Time, m AssetMatch) (int, []AssetHit, error) {
	// Most looks find nothing: a read, not a write transaction (on SQLite
	// the write lock, which ingestion waits for).
	var one []int64
	if err := s.reader().NewRaw("SELECT id FROM asset_sightings_pending LIMIT 1").Scan(ctx, &one); err != nil {
		return 0, nil, fmt.Errorf("store: unable to read asset sightings: %w", err)
	}
	if len(one) == 0 {
		return 0, nil, nil
	}
	lock := ""
	if s.Dialect == Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var drained int
	var fresh []AssetHit
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		drained, fresh = 0, nil
		var pending []PendingAssetSighting
		if err := tx.NewRaw("SELECT * FROM asset_sightings_pending ORDER BY id LIMIT ?"+lock, limit).Scan(ctx, &pending); err != nil {
			return err
		}
		if len(pending) == 0 {
			return nil
		}
		var hits []AssetHit
		assetIDs := map[int64]bool{}
		feedIDs := map[int64]bool{}
		ids := make([]int64, len(pending))
		for i := range pending {
			p := &pending[i]
			ids[i] = p.ID
			for _, id := range m.Candidates(p) {
				assetIDs[id], feedIDs[p.FeedID] = true, true
				hits = append(hits, AssetHit{AssetID: id, IoCType: p.Kind, IoCValue: p.Value, Score: p.Score, Tags: p.Tags,
					FeedID: p.FeedID, At: micros(now), ExpiresAt: p.ExpiresAt})
			}
		}
		if len(hits) > 0 {
			assets := map[int64]*TenantAsset{}
			for chunk := range slices.Chunk(slices.Collect(maps.Keys(assetIDs)), assetChunk) {
				var page []TenantAsset
				if err := tx.NewSelect().Model(&page).Where("id IN (?)", bun.In(chunk)).Scan(ctx); err != nil {
					return err
				}
				for i := range page {
					assets[page[i].ID] = &page[i]
				}
			}
			var feeds []struct {
				ID   int64  `bun:"id"`
				Name string `bun:"name"`
			}
			if err := tx.NewRaw("SELECT id, name FROM feeds WHERE id IN (?)", bun.In(slices.Collect(maps.Keys(feedIDs)))).Scan(ctx, &feeds); err != nil {
				return err
			}
			names := make(map[int64]string, len(feeds))
			for _, f := range feeds {
				names[f.ID] = f.Name
			}
			confirmed := hits[:0]
			for _, h := range hits {
				a := assets[h.AssetID]
				name, ok := names[h.FeedID]
				if a == nil || !ok || !m.Covers(a, h.IoCType, h.IoCValue) {
					continue
				}
				h.TenantID, h.Asset, h.FeedName = a.TenantID, a.Value, name
				confirmed = append(confirmed, h)
			}
			var err error
			if fresh, err = s.recordAssetHits(ctx, tx, confirmed, now, m.Notify); err != nil {
				return err
			}
		}
		for chunk := range slices.Chunk(ids, assetChunk) {
			if _, err := tx.NewDelete().Model((*PendingAssetSighting)(nil)).Where("id IN (?)", bun.In(chunk)).Exec(ctx); err != nil {
				return err
			}
		}
		drained = len(pending)
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("store: unable to match asset sightings: %w", err)
	}
	return drained, fresh, nil
}

// PendingAssetSightings counts the asset sightings waiting to be matched.
func (s *Store) PendingAssetSightings(ctx context.Context) (int64, error) {
	n, err := s.reader().NewSelect().Model((*PendingAssetSighting)(nil)).Count(ctx)
	return int64(n), err
}

// AssetHits returns a page of hits, newest first, of tenantID (every
// tenant's when nil), before the hit after (0: from the newest).
func (s *Store) AssetHits(ctx context.Context, tenantID *string, first int, after int64) ([]AssetHit, error) {
	var out []AssetHit
	q := s.reader().NewSelect().Model(&out).OrderExpr("id DESC").Limit(int64(first))
	if tenantID != nil {
		q = q.Where("tenant_id = ?", *tenantID)
	}
	if after > 0 {
		q = q.Where("id < ?", after)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read asset hits: %w", err)
	}
	return out, nil
}

// TenantAssetsByID returns the assets of these ids that exist.
func (s *Store) TenantAssetsByID(ctx context.Context, ids []int64) ([]TenantAsset, error) {
	var out []TenantAsset
	for start := 0; start < len(ids); start += assetChunk {
		var page []TenantAsset
		if err := s.reader().NewSelect().Model(&page).Where("id IN (?)", bun.In(ids[start:min(start+assetChunk, len(ids))])).Scan(ctx); err != nil {
			return nil, fmt.Errorf("store: unable to read assets: %w", err)
		}
		out = append(out, page...)
	}
	return out, nil
}
