package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Notification events, as stored and sent in X-Tifeeds-Event.
const (
	EventFeedHealth = "FEED_HEALTH"
	EventAssetHit   = "ASSET_HIT"
	EventTest       = "TEST"
)

// Channel kinds.
const (
	ChannelWebhook = "webhook"
	ChannelEmail   = "email"
)

// Delivery statuses of the delivery log.
const (
	DeliveryDelivered = "delivered"
	DeliveryRetrying  = "retrying"
	DeliveryGaveUp    = "gave_up"
)

// MaxDeliveryLog is how many deliveries the log keeps per channel; older
// ones are deleted as new ones are written.
const MaxDeliveryLog = 200

// NotifyChannel is where notifications go: a webhook URL or email
// addresses, owned by root (TenantID nil) or by one tenant.
type NotifyChannel struct {
	bun.BaseModel `bun:"table:notify_channels"`

	ID       int64   `bun:"id,pk,autoincrement"`
	TenantID *string `bun:"tenant_id"`
	Name     string  `bun:"name,notnull"`
	Kind     string  `bun:"kind,notnull"`
	// Target is the webhook URL or the email addresses, comma-separated.
	Target string `bun:"target,notnull"`
	// Secret is the webhook's signing secret, sealed by Secrets; never
	// returned by an API after creation.
	Secret    []byte `bun:"secret"`
	Events    string `bun:"events,notnull"` // comma-separated
	CreatedAt int64  `bun:"created_at,notnull"`
}

// EventList is the channel's events.
func (c *NotifyChannel) EventList() []string {
	if c.Events == "" {
		return nil
	}
	return strings.Split(c.Events, ",")
}

// Wants reports whether the channel is subscribed to event (every channel
// takes its own test events).
func (c *NotifyChannel) Wants(event string) bool {
	for _, e := range c.EventList() {
		if e == event {
			return true
		}
	}
	return false
}

// receives says whether n goes to the channel: a root channel (no tenant)
// or one of n's tenant, that wants n's event.
func (c *NotifyChannel) receives(n Notification) bool {
	if c.TenantID != nil && (n.TenantID == nil || *c.TenantID != *n.TenantID) {
		return false
	}
	return c.Wants(n.Event)
}

// Created is when the channel was created.
func (c *NotifyChannel) Created() time.Time { return fromMicros(c.CreatedAt) }

// OutboxItem is one notification to one channel, waiting to be sent.
type OutboxItem struct {
	bun.BaseModel `bun:"table:notify_outbox"`

	ID         int64  `bun:"id,pk,autoincrement"`
	ChannelID  int64  `bun:"channel_id,notnull"`
	DeliveryID string `bun:"delivery_id,notnull"`
	Event      string `bun:"event,notnull"`
	Body       string `bun:"body,notnull"`
	CreatedAt  int64  `bun:"created_at,notnull"`
	NextAt     int64  `bun:"next_at,notnull"`
	Attempts   int    `bun:"attempts,notnull"`
	LeaseUntil *int64 `bun:"lease_until"`
	LeaseToken string `bun:"lease_token,notnull"`
}

// Created is when the notification was written.
func (o *OutboxItem) Created() time.Time { return fromMicros(o.CreatedAt) }

// Delivery is one attempt in a channel's delivery log.
type Delivery struct {
	bun.BaseModel `bun:"table:notify_deliveries"`

	ID         int64  `bun:"id,pk,autoincrement"`
	ChannelID  int64  `bun:"channel_id,notnull"`
	DeliveryID string `bun:"delivery_id,notnull"`
	Event      string `bun:"event,notnull"`
	At         int64  `bun:"at,notnull"`
	Attempt    int    `bun:"attempt,notnull"`
	Status     string `bun:"status,notnull"`
	HTTPStatus int    `bun:"http_status,notnull"`
	LatencyMS  int64  `bun:"latency_ms,notnull"`
	Error      string `bun:"error,notnull"`
}

// Time is when the attempt ended.
func (d *Delivery) Time() time.Time { return fromMicros(d.At) }

// Notification is one event to enqueue: Body builds the JSON sent to a
// channel, given the delivery id the channel's copy carries.
type Notification struct {
	Event string
	// TenantID, when set, sends it to that tenant's channels as well as
	// root's; nil sends it to root's only.
	TenantID *string
	Body     func(deliveryID string) ([]byte, error)
}

// CreateChannel stores c unless its owner has max channels already.
func (s *Store) CreateChannel(ctx context.Context, c *NotifyChannel, max int) error {
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewSelect().Model((*NotifyChannel)(nil))
		if c.TenantID == nil {
			q = q.Where("tenant_id IS NULL")
		} else {
			q = q.Where("tenant_id = ?", *c.TenantID)
		}
		n, err := q.Count(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to count channels: %w", err)
		}
		if n >= int64(max) {
			return Invalid("", "at most %d channels per owner", max)
		}
		if _, err := tx.NewInsert().Model(c).Returning("id").Exec(ctx); err != nil {
			if isForeignKeyViolation(err) {
				return fmt.Errorf("store: tenant: %w", ErrNotFound)
			}
			return fmt.Errorf("store: unable to create the channel: %w", err)
		}
		return nil
	})
}

func isForeignKeyViolation(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "FOREIGN KEY constraint failed") || strings.Contains(msg, "SQLSTATE 23503")
}

// Channels returns the channels of tenantID (every channel when all is
// set, root's when tenantID is nil), oldest first.
func (s *Store) Channels(ctx context.Context, tenantID *string, all bool) ([]NotifyChannel, error) {
	var out []NotifyChannel
	q := s.reader().NewSelect().Model(&out).Order("id")
	switch {
	case all:
	case tenantID == nil:
		q = q.Where("tenant_id IS NULL")
	default:
		q = q.Where("tenant_id = ?", *tenantID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read channels: %w", err)
	}
	return out, nil
}

// Channel returns channel id or ErrNotFound.
func (s *Store) Channel(ctx context.Context, id int64) (*NotifyChannel, error) {
	c := &NotifyChannel{}
	if err := s.reader().NewSelect().Model(c).Where("id = ?", id).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("store: channel %d: %w", id, ErrNotFound)
		}
		return nil, fmt.Errorf("store: unable to read channel %d: %w", id, err)
	}
	return c, nil
}

// DeleteChannel deletes channel id, its outbox and log.
func (s *Store) DeleteChannel(ctx context.Context, id int64) error {
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		for _, q := range []string{"DELETE FROM notify_outbox WHERE channel_id = ?", "DELETE FROM notify_deliveries WHERE channel_id = ?"} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return fmt.Errorf("store: unable to delete channel %d: %w", id, err)
			}
		}
		r, err := tx.ExecContext(ctx, "DELETE FROM notify_channels WHERE id = ?", id)
		if err != nil {
			return fmt.Errorf("store: unable to delete channel %d: %w", id, err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return fmt.Errorf("store: channel %d: %w", id, ErrNotFound)
		}
		return nil
	})
}

// Deliveries returns channel id's delivery log, newest first, after the
// entry after (0: from the newest).
func (s *Store) Deliveries(ctx context.Context, channelID int64, first int, after int64) ([]Delivery, error) {
	var out []Delivery
	q := s.reader().NewSelect().Model(&out).Where("channel_id = ?", channelID).OrderExpr("id DESC").Limit(int64(first))
	if after > 0 {
		q = q.Where("id < ?", after)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read deliveries: %w", err)
	}
	return out, nil
}

// Enqueue writes n to the outbox of every channel subscribed to its event,
// in tx (nil: a transaction of its own), and returns how many it wrote.
// The channel test writes with EnqueueTo.
func (s *Store) Enqueue(ctx context.Context, tx bun.IDB, n Notification, now time.Time) (int, error) {
	if tx == nil {
		tx = s.DB
	}
	var chans []NotifyChannel
	q := tx.NewSelect().Model(&chans).Order("id")
	if n.TenantID == nil {
		q = q.Where("tenant_id IS NULL")
	} else {
		q = q.Where("tenant_id IS NULL OR tenant_id = ?", *n.TenantID)
	}
	if err := q.Scan(ctx); err != nil {
		return 0, fmt.Errorf("store: unable to read channels: %w", err)
	}
	count := 0
	for i := range chans {
		if !chans[i].receives(n) {
			continue
		}
		if err := s.enqueueTo(ctx, tx, chans[i].ID, n, now); err != nil {
			return count, err
		}
		count++
	}
	return count, nil
}

// EnqueueTo writes n to channel id's outbox whatever its events.
func (s *Store) EnqueueTo(ctx context.Context, channelID int64, n Notification, now time.Time) error {
	return s.enqueueTo(ctx, s.DB, channelID, n, now)
}

func (s *Store) enqueueTo(ctx context.Context, tx bun.IDB, channelID int64, n Notification, now time.Time) error {
	item, err := newOutboxItem(channelID, n, now)
	if err != nil {
		return err
	}
	if _, err := tx.NewInsert().Model(item).Exec(ctx); err != nil {
		return fmt.Errorf("store: unable to write to the outbox: %w", err)
	}
	return nil
}

// newOutboxItem is n's copy for channel channelID, due now.
func newOutboxItem(channelID int64, n Notification, now time.Time) (*OutboxItem, error) {
	id := NewDeliveryID()
	body, err := n.Body(id)
	if err != nil {
		return nil, fmt.Errorf("store: unable to build a notification: %w", err)
	}
	return &OutboxItem{ChannelID: channelID, DeliveryID: id, Event: n.Event, Body: string(body),
		CreatedAt: micros(now), NextAt: micros(now)}, nil
}

// NewDeliveryID returns a random delivery id (a UUID v4).
func NewDeliveryID() string { return uuid.NewString() }

// ClaimOutbox leases up to limit due notifications until leaseUntil under
// token: no other worker claims them before the lease expires, so a worker
// killed while sending leaves them to another once it has. On PostgreSQL,
// workers skip the rows another is claiming (FOR UPDATE SKIP LOCKED); on
// SQLite the write lock serialises claims.
func (s *Store) ClaimOutbox(ctx context.Context, now, leaseUntil time.Time, token string, limit int) ([]OutboxItem, error) {
	var out []OutboxItem
	lock := ""
	if s.Dialect == Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var ids []int64
		if err := tx.NewRaw(`SELECT id FROM notify_outbox WHERE next_at <= ? AND (lease_until IS NULL OR lease_until < ?)
ORDER BY next_at, id LIMIT ?`+lock, micros(now), micros(now), limit).Scan(ctx, &ids); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.NewUpdate().Model((*OutboxItem)(nil)).
			Set("lease_until = ?", micros(leaseUntil)).Set("lease_token = ?", token).Set("attempts = attempts + 1").
			Where("id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
			return err
		}
		return tx.NewSelect().Model(&out).Where("id IN (?)", bun.In(ids)).Order("id").Scan(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("store: unable to claim notifications: %w", err)
	}
	return out, nil
}

// ErrLeaseLost is returned when a worker's lease on a notification expired
// and another worker claimed it.
var ErrLeaseLost = errors.New("store: the notification's lease was lost")

// FinishDelivery records attempt d of item, claimed under token: delivered
// or given up deletes the item; retrying sets it due at next. The log of
// the channel keeps its last MaxDeliveryLog entries.
func (s *Store) FinishDelivery(ctx context.Context, item *OutboxItem, token string, d *Delivery, next time.Time) error {
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var r sql.Result
		var err error
		if d.Status == DeliveryRetrying {
			r, err = tx.NewUpdate().Model((*OutboxItem)(nil)).Set("next_at = ?", micros(next)).Set("lease_until = NULL").
				Set("lease_token = ''").Where("id = ? AND lease_token = ?", item.ID, token).Exec(ctx)
		} else {
			r, err = tx.ExecContext(ctx, "DELETE FROM notify_outbox WHERE id = ? AND lease_token = ?", item.ID, token)
		}
		if err != nil {
			return fmt.Errorf("store: unable to record a delivery: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return ErrLeaseLost
		}
		d.ChannelID, d.DeliveryID, d.Event, d.Attempt = item.ChannelID, item.DeliveryID, item.Event, item.Attempts
		if _, err := tx.NewInsert().Model(d).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to record a delivery: %w", err)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM notify_deliveries WHERE channel_id = ? AND id < (
SELECT MIN(id) FROM (SELECT id FROM notify_deliveries WHERE channel_id = ? ORDER BY id DESC LIMIT ?) AS kept)`,
			item.ChannelID, item.ChannelID, MaxDeliveryLog)
		if err != nil {
			return fmt.Errorf("store: unable to prune the delivery log: %w", err)
		}
		return nil
	})
}

// OutboxLen counts the notifications waiting to be sent.
func (s *Store) OutboxLen(ctx context.Context) (int64, error) {
	return s.reader().NewSelect().Model((*OutboxItem)(nil)).Count(ctx)
}

// Feed health states.
const (
	HealthOK    = "ok"
	HealthError = "error"
	HealthStale = "stale"
)

// FeedHealth is what the health watch last said of a feed, and its
// staleness threshold.
type FeedHealth struct {
	bun.BaseModel `bun:"table:feed_health"`

	FeedID int64  `bun:"feed_id,pk"`
	State  string `bun:"state,notnull"`
	// StaleAfterSeconds is the threshold; nil for the default.
	StaleAfterSeconds *int64 `bun:"stale_after_seconds"`
	ChangedAt         int64  `bun:"changed_at,notnull"`
}

// FeedHealths returns every feed's health row.
func (s *Store) FeedHealths(ctx context.Context) ([]FeedHealth, error) {
	var out []FeedHealth
	if err := s.reader().NewSelect().Model(&out).Order("feed_id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read feed health: %w", err)
	}
	return out, nil
}

// SetStaleThreshold sets feed id's staleness threshold (nil: the default).
func (s *Store) SetStaleThreshold(ctx context.Context, feedID int64, seconds *int64, now time.Time) error {
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := ensureHealth(ctx, tx, feedID, now); err != nil {
			return err
		}
		_, err := tx.NewUpdate().Model((*FeedHealth)(nil)).Set("stale_after_seconds = ?", seconds).Where("feed_id = ?", feedID).Exec(ctx)
		return err
	})
}

func ensureHealth(ctx context.Context, tx bun.Tx, feedID int64, now time.Time) error {
	_, err := tx.NewInsert().Model(&FeedHealth{FeedID: feedID, State: HealthOK, ChangedAt: micros(now)}).
		On("CONFLICT (feed_id) DO NOTHING").Exec(ctx)
	if err != nil && isForeignKeyViolation(err) {
		return fmt.Errorf("store: feed %d: %w", feedID, ErrNotFound)
	}
	return err
}

// ChangeFeedHealth moves feed id from the state from to to and enqueues n
// in the same transaction. It reports false, enqueueing nothing, when the
// feed was not in from (another instance moved it first): one notification
// per change, cluster-wide.
func (s *Store) ChangeFeedHealth(ctx context.Context, feedID int64, from, to string, n Notification, now time.Time) (bool, error) {
	changed := false
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := ensureHealth(ctx, tx, feedID, now); err != nil {
			return err
		}
		r, err := tx.NewUpdate().Model((*FeedHealth)(nil)).Set("state = ?", to).Set("changed_at = ?", micros(now)).
			Where("feed_id = ? AND state = ?", feedID, from).Exec(ctx)
		if err != nil {
			return err
		}
		if k, _ := r.RowsAffected(); k == 0 {
			return nil
		}
		changed = true
		_, err = s.Enqueue(ctx, tx, n, now)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: unable to change the health of feed %d: %w", feedID, err)
	}
	return changed, nil
}
