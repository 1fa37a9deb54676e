package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
)

// FeedFilter narrows a feed listing. Each list matches any of its values;
// the lists combine with AND. Empty lists do not filter.
type FeedFilter struct {
	Names              []string
	Types              []FeedType
	Statuses           []FeedStatus
	StatusMessages     []string
	Enabled            []bool
	PollingFrequencies []int
	RetentionPeriods   []int
	BackfillDays       []int
	Descriptions       []string
	LastIngestionFrom  *time.Time
	LastIngestionTo    *time.Time
}

// FeedOrderField names a sortable column of the feeds table.
type FeedOrderField string

// The sortable columns.
const (
	OrderFeedName             FeedOrderField = "name"
	OrderFeedType             FeedOrderField = "type"
	OrderFeedStatus           FeedOrderField = "status"
	OrderFeedStatusMessage    FeedOrderField = "status_message"
	OrderFeedEnabled          FeedOrderField = "enabled"
	OrderFeedPollingFrequency FeedOrderField = "polling_frequency"
	OrderFeedRetentionPeriod  FeedOrderField = "retention_period"
	OrderFeedBackfillDays     FeedOrderField = "backfill_days"
	OrderFeedDescription      FeedOrderField = "description"
	OrderFeedLastIngestion    FeedOrderField = "last_ingestion"
)

// FeedQuery is one page of the feeds table.
type FeedQuery struct {
	Search string
	Filter FeedFilter
	Order  FeedOrderField // name when empty
	Desc   bool
	Offset int
	Limit  int
}

// feedStatusExpr derives FeedStatus in SQL, like Feed.DerivedStatus.
func feedStatusExpr() string {
	msgs := []string{MessageStopped}
	for _, k := range []ioc.FailureKind{ioc.InvalidCredentials, ioc.InvalidURL, ioc.InvalidCollectionURL,
		ioc.ConnectionError, ioc.FetchingDataError, ioc.SurpassedQueryLimit, ioc.FailedToConnect} {
		msgs = append(msgs, string(k))
	}
	return "CASE WHEN NOT enabled THEN 'disabled' WHEN status_message IN ('" +
		strings.Join(msgs, "', '") + "') THEN 'error' ELSE 'success' END"
}

// FeedSearchColumns are the text columns the free-text search looks in.
var FeedSearchColumns = []string{"name", "type", "category", "status_message", "description", "collection_url", "username"}

// ApplyFeedFilter adds the search and the filter to q (a select on feeds).
// The facets of the feeds table use it too.
func ApplyFeedFilter(q *bun.SelectQuery, search string, f FeedFilter) *bun.SelectQuery {
	if search = strings.TrimSpace(search); search != "" {
		pattern := "%" + likeEscaper.Replace(strings.ToLower(search)) + "%"
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			for _, col := range FeedSearchColumns {
				q = q.WhereOr("LOWER(?) LIKE ? ESCAPE '\\'", bun.Ident(col), pattern)
			}
			return q
		})
	}
	if len(f.Names) > 0 {
		q = q.Where("name IN (?)", bun.In(f.Names))
	}
	if len(f.Types) > 0 {
		q = q.Where("type IN (?)", bun.In(f.Types))
	}
	if len(f.Statuses) > 0 {
		q = q.Where(feedStatusExpr()+" IN (?)", bun.In(f.Statuses))
	}
	if len(f.StatusMessages) > 0 {
		q = q.Where("status_message IN (?)", bun.In(f.StatusMessages))
	}
	if len(f.Enabled) == 1 {
		if f.Enabled[0] {
			q = q.Where("enabled")
		} else {
			q = q.Where("NOT enabled")
		}
	}
	if len(f.PollingFrequencies) > 0 {
		q = q.Where("polling_frequency IN (?)", bun.In(f.PollingFrequencies))
	}
	if len(f.RetentionPeriods) > 0 {
		q = q.Where("retention_period IN (?)", bun.In(f.RetentionPeriods))
	}
	if len(f.BackfillDays) > 0 {
		q = q.Where("backfill_days IN (?)", bun.In(f.BackfillDays))
	}
	if len(f.Descriptions) > 0 {
		q = q.Where("description IN (?)", bun.In(f.Descriptions))
	}
	if f.LastIngestionFrom != nil {
		q = q.Where("last_ingestion >= ?", f.LastIngestionFrom.UTC())
	}
	if f.LastIngestionTo != nil {
		q = q.Where("last_ingestion <= ?", f.LastIngestionTo.UTC())
	}
	return q
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// Feeds returns one page of feeds and how many match in all.
func (s *Store) Feeds(ctx context.Context, fq FeedQuery) ([]Feed, int, error) {
	var feeds []Feed
	q := ApplyFeedFilter(s.reader().NewSelect().Model(&feeds), fq.Search, fq.Filter)
	dir := " ASC"
	if fq.Desc {
		dir = " DESC"
	}
	switch fq.Order {
	case "", OrderFeedName:
		q = q.OrderExpr("name" + dir)
	case OrderFeedStatus:
		q = q.OrderExpr(feedStatusExpr() + dir)
	case OrderFeedLastIngestion:
		// Never-ingested feeds last in both directions and on both dialects.
		q = q.OrderExpr("CASE WHEN last_ingestion IS NULL THEN 1 ELSE 0 END").OrderExpr("last_ingestion" + dir)
	case OrderFeedType, OrderFeedStatusMessage, OrderFeedEnabled, OrderFeedPollingFrequency,
		OrderFeedRetentionPeriod, OrderFeedBackfillDays, OrderFeedDescription:
		q = q.OrderExpr(string(fq.Order) + dir)
	default:
		return nil, 0, Invalid("orderBy", "cannot sort on %q", fq.Order)
	}
	q = q.OrderExpr("id ASC")
	if fq.Limit > 0 {
		q = q.Limit(int64(fq.Limit))
	}
	q = q.Offset(int64(fq.Offset))
	total, err := q.ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("store: unable to list feeds: %w", err)
	}
	return feeds, int(total), nil
}
