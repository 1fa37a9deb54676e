package graph

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

// Page sizes of the feeds table and of run lists.
const (
	defaultFeedPage = 50
	maxFeedPage     = 500
	defaultRunPage  = 20
	maxRunPage      = 200
)

// errNoRunner is returned by feed mutations when the server runs without
// the feed service (a wiring error).
var errNoRunner = errors.New("graph: feed changes need the feed service")

func (r *Resolver) feedService() (*feeds.Service, error) {
	if r.Feeds == nil {
		return nil, errNoRunner
	}
	return r.Feeds, nil
}

// feedServiceAndID is the start of every feed mutation on an existing feed.
func (r *Resolver) feedServiceAndID(id string) (*feeds.Service, int64, error) {
	run, err := r.feedService()
	if err != nil {
		return nil, 0, err
	}
	feedID, err := parseID("id", id)
	if err != nil {
		return nil, 0, err
	}
	return run, feedID, nil
}

func (r *Resolver) feedStatus(_ context.Context, obj *store.Feed) (store.FeedStatus, error) {
	return obj.DerivedStatus(), nil
}

func (r *Resolver) feedHasPassword(_ context.Context, obj *store.Feed) (bool, error) {
	return obj.HasSecret(), nil
}

func (r *Resolver) feedIocCount(ctx context.Context, obj *store.Feed) (int, error) {
	n, err := r.Store.CountFeedIoCs(ctx, obj.ID)
	return int(n), err
}

func (r *Resolver) feedCanEdit(_ context.Context, obj *store.Feed) (bool, error) {
	return obj.Editable(), nil
}

func (r *Resolver) feedCanDelete(_ context.Context, obj *store.Feed) (bool, error) {
	return obj.Deletable(), nil
}

func (r *Resolver) feedCanReset(_ context.Context, obj *store.Feed) (bool, error) {
	return obj.Resettable(), nil
}

func (r *Resolver) feedLastRun(ctx context.Context, obj *store.Feed) (*store.FeedRun, error) {
	run, err := r.Store.LastRun(ctx, obj.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return run, err
}

// feedNextRun asks the scheduler, which holds a job for every enabled feed
// (every instance schedules them all): no store read.
func (r *Resolver) feedNextRun(_ context.Context, obj *store.Feed) (*time.Time, error) {
	if r.Ingest == nil || !obj.Enabled {
		return nil, nil
	}
	at, ok := r.Ingest.NextRun(obj.ID)
	if !ok {
		return nil, nil
	}
	at = at.UTC()
	return &at, nil
}

func (r *Resolver) createCustomFeed(ctx context.Context, input model.CustomFeedInput) (*store.Feed, error) {
	run, err := r.feedService()
	if err != nil {
		return nil, err
	}
	category := model.CustomFeedCategoryTaxii
	if input.Category != nil {
		category = *input.Category
	}
	return run.CreateCustomFeed(ctx, feeds.CustomFeedInput{
		Category:         string(category),
		Name:             input.Name,
		CollectionURL:    input.CollectionURL,
		Username:         deref(input.Username),
		Password:         deref(input.Password),
		PollingFrequency: input.PollingFrequency,
		RetentionPeriod:  input.RetentionPeriod,
		BackfillDays:     derefInt(input.BackfillDays),
		Description:      deref(input.Description),
		AllowRuleActions: input.AllowRuleActions != nil && *input.AllowRuleActions,
	})
}

func (r *Resolver) updateFeed(ctx context.Context, id string, input model.FeedUpdateInput) (*store.Feed, error) {
	run, feedID, err := r.feedServiceAndID(id)
	if err != nil {
		return nil, err
	}
	return run.UpdateFeed(ctx, feedID, feeds.FeedUpdate{
		Name:             input.Name,
		CollectionURL:    input.CollectionURL,
		Username:         input.Username,
		Password:         input.Password,
		PollingFrequency: input.PollingFrequency,
		RetentionPeriod:  input.RetentionPeriod,
		BackfillDays:     input.BackfillDays,
		Description:      input.Description,
		AllowRuleActions: input.AllowRuleActions,
		APIKey:           input.APIKey,
		ClientID:         input.ClientID,
		ClientSecret:     input.ClientSecret,
		APIEndpoint:      input.APIEndpoint,
		Category:         input.Category,
	})
}

func (r *Resolver) deleteFeed(ctx context.Context, id string) (bool, error) {
	run, feedID, err := r.feedServiceAndID(id)
	if err != nil {
		return false, err
	}
	if err := run.DeleteFeed(ctx, feedID); err != nil {
		return false, err
	}
	return true, nil
}

func (r *Resolver) setFeedEnabled(ctx context.Context, id string, enabled bool, confirm *bool) (*store.Feed, error) {
	run, feedID, err := r.feedServiceAndID(id)
	if err != nil {
		return nil, err
	}
	return run.SetEnabled(ctx, feedID, enabled, confirm != nil && *confirm)
}

func (r *Resolver) runFeedNow(ctx context.Context, id string) (*store.Feed, error) {
	run, feedID, err := r.feedServiceAndID(id)
	if err != nil {
		return nil, err
	}
	return run.RunNow(ctx, feedID)
}

func (r *Resolver) resetFeedCursor(ctx context.Context, id string) (*store.Feed, error) {
	run, feedID, err := r.feedServiceAndID(id)
	if err != nil {
		return nil, err
	}
	return run.ResetCursor(ctx, feedID)
}

// feedOrderFields maps the schema's order fields to the store's columns.
var feedOrderFields = map[model.FeedOrderField]store.FeedOrderField{
	model.FeedOrderFieldName:             store.OrderFeedName,
	model.FeedOrderFieldType:             store.OrderFeedType,
	model.FeedOrderFieldStatus:           store.OrderFeedStatus,
	model.FeedOrderFieldStatusMessage:    store.OrderFeedStatusMessage,
	model.FeedOrderFieldEnabled:          store.OrderFeedEnabled,
	model.FeedOrderFieldPollingFrequency: store.OrderFeedPollingFrequency,
	model.FeedOrderFieldRetentionPeriod:  store.OrderFeedRetentionPeriod,
	model.FeedOrderFieldBackfillDays:     store.OrderFeedBackfillDays,
	model.FeedOrderFieldDescription:      store.OrderFeedDescription,
	model.FeedOrderFieldLastIngestion:    store.OrderFeedLastIngestion,
}

// FeedFilterFromInput turns the schema's FeedFilter into the store's.
func FeedFilterFromInput(f *model.FeedFilter) store.FeedFilter {
	if f == nil {
		return store.FeedFilter{}
	}
	return store.FeedFilter{
		Names:              f.Name,
		Types:              f.Type,
		Statuses:           f.Status,
		StatusMessages:     f.StatusMessage,
		Enabled:            f.Enabled,
		PollingFrequencies: f.PollingFrequency,
		RetentionPeriods:   f.RetentionPeriod,
		BackfillDays:       f.BackfillDays,
		Descriptions:       f.Description,
		LastIngestionFrom:  f.LastIngestionFrom,
		LastIngestionTo:    f.LastIngestionTo,
	}
}

func (r *Resolver) feeds(ctx context.Context, search *string, filter *model.FeedFilter, orderBy *model.FeedOrder, first *int, after *string) (*model.FeedConnection, error) {
	q := store.FeedQuery{Search: deref(search), Filter: FeedFilterFromInput(filter), Limit: defaultFeedPage}
	if orderBy != nil {
		q.Order = feedOrderFields[orderBy.Field]
		if q.Order == "" {
			return nil, store.Invalid("orderBy", "cannot sort on %s", orderBy.Field)
		}
		q.Desc = orderBy.Direction != nil && *orderBy.Direction == model.OrderDirectionDesc
	}
	if first != nil {
		if *first < 0 || *first > maxFeedPage {
			return nil, store.Invalid("first", "must be between 0 and %d", maxFeedPage)
		}
		q.Limit = *first
	}
	if after != nil && *after != "" {
		off, err := decodeOffsetCursor(*after)
		if err != nil {
			return nil, store.Invalid("after", "is not a cursor of this list")
		}
		q.Offset = off
	}
	conn := &model.FeedConnection{Nodes: []*store.Feed{}, PageInfo: &model.PageInfo{}}
	if q.Limit == 0 {
		// first: 0 asks only for the count.
		_, total, err := r.Store.Feeds(ctx, store.FeedQuery{Search: q.Search, Filter: q.Filter, Limit: 1})
		conn.TotalCount = total
		return conn, err
	}
	feeds, total, err := r.Store.Feeds(ctx, q)
	if err != nil {
		return nil, err
	}
	conn.TotalCount = total
	for i := range feeds {
		conn.Nodes = append(conn.Nodes, &feeds[i])
	}
	end := q.Offset + len(feeds)
	if len(feeds) > 0 {
		c := encodeOffsetCursor(end)
		conn.PageInfo.EndCursor = &c
	}
	conn.PageInfo.HasNextPage = end < total
	return conn, nil
}

// Cursors of offset-paged lists are opaque to clients.
func encodeOffsetCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(offset)))
}

func decodeOffsetCursor(c string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(string(b), "offset:")
	if !ok {
		return 0, fmt.Errorf("cursor %q is not an offset", c)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("cursor %q is not an offset", c)
	}
	return n, nil
}

func (r *Resolver) feed(ctx context.Context, id string) (*store.Feed, error) {
	feedID, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	return r.Store.Feed(ctx, feedID)
}

func (r *Resolver) feedRuns(ctx context.Context, feedID string, first *int) ([]*store.FeedRun, error) {
	id, err := parseID("feedId", feedID)
	if err != nil {
		return nil, err
	}
	if _, err := r.Store.Feed(ctx, id); err != nil {
		return nil, err
	}
	limit := defaultRunPage
	if first != nil {
		if *first < 1 || *first > maxRunPage {
			return nil, store.Invalid("first", "must be between 1 and %d", maxRunPage)
		}
		limit = *first
	}
	runs, err := r.Store.FeedRuns(ctx, id, limit)
	if err != nil {
		return nil, err
	}
	out := make([]*store.FeedRun, len(runs))
	for i := range runs {
		out[i] = &runs[i]
	}
	return out, nil
}

func (r *Resolver) sightingFeed(ctx context.Context, obj *store.Sighting) (*store.Feed, error) {
	return r.feedOf(ctx, obj.FeedID) // batched per request by the loader
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}
