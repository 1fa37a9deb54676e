package graph

import (
	"errors"
	"strconv"
	"strings"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store"
)

// Notifications are the notification services the resolvers call; nil
// fields answer that notifications are not configured.
type Notifications struct {
	Channels *notify.Channels
	Assets   *notify.Assets
	Health   *notify.Health
}

var errNoNotifications = errors.New("notifications are not configured on this server")

func (r *Resolver) channels() (*notify.Channels, error) {
	if r.Notify.Channels == nil {
		return nil, errNoNotifications
	}
	return r.Notify.Channels, nil
}

func (r *Resolver) assets() (*notify.Assets, error) {
	if r.Notify.Assets == nil {
		return nil, errNoNotifications
	}
	return r.Notify.Assets, nil
}

func (r *Resolver) health() (*notify.Health, error) {
	if r.Notify.Health == nil {
		return nil, errNoNotifications
	}
	return r.Notify.Health, nil
}

func eventNames(in []model.NotificationEvent) []string {
	out := make([]string, len(in))
	for i, e := range in {
		out[i] = string(e)
	}
	return out
}

func channelModel(c *store.NotifyChannel) *model.NotificationChannel {
	m := &model.NotificationChannel{ID: strconv.FormatInt(c.ID, 10), Name: c.Name, TenantID: c.TenantID,
		Target: c.Target, CreatedAt: c.Created()}
	if c.Kind == store.ChannelWebhook {
		m.Kind = model.ChannelKindWebhook
		m.Target = ioc.MaskURLs(c.Target)
	} else {
		m.Kind = model.ChannelKindEmail
		m.Target = strings.ReplaceAll(c.Target, ",", ", ")
	}
	for _, e := range c.EventList() {
		m.Events = append(m.Events, model.NotificationEvent(e))
	}
	return m
}

var deliveryStatuses = map[string]model.DeliveryStatus{
	store.DeliveryDelivered: model.DeliveryStatusDelivered,
	store.DeliveryRetrying:  model.DeliveryStatusRetrying,
	store.DeliveryGaveUp:    model.DeliveryStatusGaveUp,
}

func deliveryModel(d *store.Delivery) *model.Delivery {
	return &model.Delivery{ID: strconv.FormatInt(d.ID, 10), DeliveryID: d.DeliveryID, Event: d.Event, At: d.Time(),
		Attempt: d.Attempt, Status: deliveryStatuses[d.Status], HTTPStatus: d.HTTPStatus, LatencyMs: int(d.LatencyMS), Error: d.Error}
}

var healthStates = map[string]model.FeedHealthState{
	store.HealthOK: model.FeedHealthStateOk, store.HealthError: model.FeedHealthStateError, store.HealthStale: model.FeedHealthStateStale,
}

func healthModel(v *notify.FeedHealthView) *model.FeedHealthWatch {
	return &model.FeedHealthWatch{FeedID: strconv.FormatInt(v.Feed.ID, 10), FeedName: v.Feed.Name, State: healthStates[v.State],
		StaleAfterHours: int(v.Threshold.Hours()), ThresholdSet: v.ThresholdSet}
}

func assetModel(a *store.TenantAsset) *model.TenantAsset {
	return &model.TenantAsset{ID: strconv.FormatInt(a.ID, 10), Kind: entryKinds[allowlist.EntryKind(a.Kind)], Value: a.Value, CreatedAt: a.Created()}
}

func hitModel(h *store.AssetHit) *model.AssetHit {
	tags := h.Tags
	if tags == nil {
		tags = []string{}
	}
	return &model.AssetHit{ID: strconv.FormatInt(h.ID, 10), TenantID: h.TenantID, Asset: h.Asset, IocType: h.IoCType, IocValue: h.IoCValue,
		Score: h.Score, Tags: tags, FeedID: strconv.FormatInt(h.FeedID, 10), FeedName: h.FeedName, At: h.Time(), ExpiresAt: h.Expires()}
}

// pageArgs reads first (def when nil) and an id cursor.
func pageArgs(first *int, def int, after *string) (int, int64, error) {
	n := def
	if first != nil {
		n = *first
	}
	var a int64
	if after != nil && *after != "" {
		v, err := strconv.ParseInt(*after, 10, 64)
		if err != nil || v <= 0 {
			return 0, 0, store.Invalid("after", "not a cursor of this list")
		}
		a = v
	}
	return n, a, nil
}

// pageInfo is the page info of a page of n rows asked: a full page may
// have a next one.
func pageInfo[T any](rows []T, n int, id func(*T) int64) *model.PageInfo {
	info := &model.PageInfo{HasNextPage: len(rows) == n && n > 0}
	if len(rows) > 0 {
		c := strconv.FormatInt(id(&rows[len(rows)-1]), 10)
		info.EndCursor = &c
	}
	return info
}
