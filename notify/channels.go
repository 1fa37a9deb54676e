package notify

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// Bounds of channels.
const (
	MaxChannels       = 50 // per owner: root, or one tenant
	maxChannelName    = 100
	maxWebhookURL     = 2048
	maxRecipients     = 10
	minSecretLen      = 16
	maxSecretLen      = 256
	MaxDeliveriesPage = 100
)

// Events a channel may subscribe to.
var Events = []string{store.EventFeedHealth, store.EventAssetHit}

// ChannelStore is what the channel service needs of the store.
type ChannelStore interface {
	CreateChannel(ctx context.Context, c *store.NotifyChannel, max int) error
	Channels(ctx context.Context, tenantID *string, all bool) ([]store.NotifyChannel, error)
	Channel(ctx context.Context, id int64) (*store.NotifyChannel, error)
	DeleteChannel(ctx context.Context, id int64) error
	Deliveries(ctx context.Context, channelID int64, first int, after int64) ([]store.Delivery, error)
	EnqueueTo(ctx context.Context, channelID int64, n store.Notification, now time.Time) error
}

// Channels manages notification channels for the caller in the context:
// root manages every channel (root's own and the tenants'), a tenant's
// users only their tenant's.
type Channels struct {
	Store   ChannelStore
	Secrets *store.Secrets
	Audit   *audit.Log
	Worker  *Worker
	Now     func() time.Time
	// NoEmail refuses email channels: the server has no SMTP server
	// (--smtp-url).
	NoEmail bool
}

// ChannelInput is a channel to create. Target is the webhook URL or the
// email addresses; Secret the webhook's signing secret (one is made when
// empty).
type ChannelInput struct {
	Kind     string
	Name     string
	Target   []string
	Secret   string
	TenantID *string
	Events   []string
}

func (c *Channels) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// owner returns the tenant a channel of the caller's may belong to: root
// may name any (nil: root's own), a tenant user only their own.
func owner(ctx context.Context, tenantID *string) (*store.User, *string, error) {
	u, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, nil, err
	}
	if u.Scope == store.ScopeRoot {
		if tenantID != nil && *tenantID == "" {
			tenantID = nil
		}
		return u, tenantID, nil
	}
	if u.TenantID == nil || tenantID != nil && *tenantID != *u.TenantID {
		return nil, nil, auth.ErrForbidden
	}
	return u, u.TenantID, nil
}

// mayUse reports whether u may see and manage ch.
func mayUse(u *store.User, ch *store.NotifyChannel) bool {
	if u.Scope == store.ScopeRoot {
		return true
	}
	return ch.TenantID != nil && u.TenantID != nil && *ch.TenantID == *u.TenantID
}

// Create validates and stores a channel, sealing its secret, and returns
// it with the secret in clear (shown this once).
func (c *Channels) Create(ctx context.Context, in ChannelInput) (*store.NotifyChannel, string, error) {
	_, tenantID, err := owner(ctx, in.TenantID)
	if err != nil {
		return nil, "", err
	}
	var errs []error
	name := strings.TrimSpace(in.Name)
	if name == "" || utf8.RuneCountInString(name) > maxChannelName {
		errs = append(errs, store.Invalid("name", "must have 1 to %d characters", maxChannelName))
	}
	events := slices.Clone(in.Events)
	slices.Sort(events)
	events = slices.Compact(events)
	if len(events) == 0 {
		errs = append(errs, store.Invalid("events", "name at least one event"))
	}
	for _, e := range events {
		if !slices.Contains(Events, e) {
			errs = append(errs, store.Invalid("events", "unknown event %q", e))
		}
		if e == store.EventFeedHealth && tenantID != nil {
			errs = append(errs, store.Invalid("events", "FEED_HEALTH goes to root's channels only"))
		}
	}
	ch := &store.NotifyChannel{TenantID: tenantID, Name: name, Kind: in.Kind, Events: strings.Join(events, ","),
		CreatedAt: c.now().UnixMicro()}
	secret := in.Secret
	switch in.Kind {
	case store.ChannelWebhook:
		raw := ""
		if len(in.Target) == 1 {
			raw = strings.TrimSpace(in.Target[0])
		}
		if len(raw) > maxWebhookURL {
			errs = append(errs, store.Invalid("url", "must have at most %d bytes", maxWebhookURL))
		} else if _, err := CheckWebhookURL(raw); err != nil {
			errs = append(errs, store.Invalid("url", "%v", err))
		}
		ch.Target = raw
		if secret == "" {
			secret = store.NewSecret(32)
		}
		if len(secret) < minSecretLen || len(secret) > maxSecretLen {
			errs = append(errs, store.Invalid("secret", "must have %d to %d bytes", minSecretLen, maxSecretLen))
		}
	case store.ChannelEmail:
		secret = ""
		if c.NoEmail {
			errs = append(errs, store.Invalid("to", "email channels need the server's SMTP setting (--smtp-url)"))
		}
		if len(in.Target) == 0 || len(in.Target) > maxRecipients {
			errs = append(errs, store.Invalid("to", "name 1 to %d addresses", maxRecipients))
		}
		var to []string
		for _, t := range in.Target {
			a, err := mail.ParseAddress(strings.TrimSpace(t))
			if err != nil || strings.ContainsAny(a.Address, ",\r\n") {
				errs = append(errs, store.Invalid("to", "%q is not an email address", t))
				continue
			}
			to = append(to, a.Address)
		}
		ch.Target = strings.Join(to, ",")
	default:
		errs = append(errs, store.Invalid("kind", "unknown channel kind"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, "", err
	}
	if ch.Secret, err = c.Secrets.Seal(secret); err != nil {
		return nil, "", err
	}
	if err := c.Store.CreateChannel(ctx, ch, MaxChannels); err != nil {
		return nil, "", err
	}
	c.Audit.Record(ctx, audit.ChannelCreate, channelTarget(ch), map[string]any{"kind": ch.Kind, "target": ioc.MaskURLs(ch.Target),
		"events": ch.Events, "tenantId": ch.TenantID})
	return ch, secret, nil
}

func channelTarget(ch *store.NotifyChannel) audit.Target {
	return audit.Target{Type: audit.TargetChannel, ID: strconv.FormatInt(ch.ID, 10), Name: ch.Name}
}

// List returns the channels the caller may see: root every channel, a
// tenant user their tenant's.
func (c *Channels) List(ctx context.Context) ([]store.NotifyChannel, error) {
	u, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	if u.Scope == store.ScopeRoot {
		return c.Store.Channels(ctx, nil, true)
	}
	if u.TenantID == nil {
		return nil, auth.ErrForbidden
	}
	return c.Store.Channels(ctx, u.TenantID, false)
}

// Get returns channel id if the caller may see it (ErrNotFound otherwise:
// another tenant's channels do not exist for a tenant's user).
func (c *Channels) Get(ctx context.Context, id int64) (*store.NotifyChannel, error) {
	u, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	ch, err := c.Store.Channel(ctx, id)
	if err != nil {
		return nil, err
	}
	if !mayUse(u, ch) {
		return nil, fmt.Errorf("notify: channel %d: %w", id, store.ErrNotFound)
	}
	return ch, nil
}

// Delete deletes channel id, its waiting notifications and its log.
func (c *Channels) Delete(ctx context.Context, id int64) error {
	ch, err := c.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := c.Store.DeleteChannel(ctx, id); err != nil {
		return err
	}
	c.Audit.Record(ctx, audit.ChannelDelete, channelTarget(ch), nil)
	return nil
}

// Test enqueues a TEST event to channel id alone; its delivery shows in
// the channel's log.
func (c *Channels) Test(ctx context.Context, id int64) error {
	ch, err := c.Get(ctx, id)
	if err != nil {
		return err
	}
	tenant := ""
	if ch.TenantID != nil {
		tenant = *ch.TenantID
	}
	now := c.now()
	n := store.Notification{Event: store.EventTest, Body: envelope(store.EventTest, tenant, now,
		map[string]any{"channel": ch.Name, "message": "A test notification from tifeeds."})}
	if err := c.Store.EnqueueTo(ctx, ch.ID, n, now); err != nil {
		return err
	}
	c.Worker.Wake()
	c.Audit.Record(ctx, audit.ChannelTest, channelTarget(ch), nil)
	return nil
}

// Deliveries returns a page of channel id's delivery log, newest first.
func (c *Channels) Deliveries(ctx context.Context, id int64, first int, after int64) ([]store.Delivery, error) {
	if _, err := c.Get(ctx, id); err != nil {
		return nil, err
	}
	if first <= 0 || first > MaxDeliveriesPage {
		return nil, store.Invalid("first", "must be 1 to %d", MaxDeliveriesPage)
	}
	return c.Store.Deliveries(ctx, id, first, after)
}
