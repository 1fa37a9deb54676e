package graph

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

// FeedStore is what the feed resolvers read of the store.
type FeedStore interface {
	Feed(ctx context.Context, id int64) (*store.Feed, error)
	Feeds(ctx context.Context, fq store.FeedQuery) ([]store.Feed, int, error)
	FeedsByID(ctx context.Context, ids []int64) ([]store.Feed, error)
	FeedFacets(ctx context.Context, search string, f store.FeedFilter) (map[store.FeedFacetColumn][]store.FacetValue, error)
	FeedRuns(ctx context.Context, feedID int64, limit int) ([]store.FeedRun, error)
	LastRun(ctx context.Context, feedID int64) (*store.FeedRun, error)
	CountFeedIoCs(ctx context.Context, feedID int64) (int64, error)
}

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
