package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ioc"
)

// FeedListOptions tunes the feed-list premium sources; zero values take the
// spec's limits and feedhttp's retry defaults.
type FeedListOptions struct {
	Client   *http.Client // nil: the registry's (the egress client, never the mirror)
	Timeout  time.Duration
	MaxBytes int64
	PerPoll  int64

	MaxRetries   int
	MaxRetryWait time.Duration
	RetryBackoff time.Duration
}

// RegisterFeedList adds the feed-list platform's premium kind: each poll
// reads the feed's document, at most PerPoll indicators of it; a document
// with more is read over several polls, each going on from the cursor, and
// expires what it no longer holds once read to its end (see
// premium.FeedListSource).
func (r *Registry) RegisterFeedList(o FeedListOptions) {
	spec, _ := premium.Lookup(premium.FeedList)
	r.Register(string(premium.FeedList), Category{
		New: func(cfg SourceConfig) (Source, error) {
			s := &premium.FeedListSource{Endpoint: cfg.URL, Client: cmp.Or(o.Client, r.client), Timeout: o.Timeout,
				MaxBytes: cmp.Or(o.MaxBytes, spec.MaxBytes), MaxRetries: o.MaxRetries, MaxRetryWait: o.MaxRetryWait,
				RetryBackoff: o.RetryBackoff}
			return SourceFunc(func(ctx context.Context, req FetchRequest, sink ioc.Sink) (string, error) {
				cursor, err := s.Fetch(ctx, req.Cursor, req.Started, req.Limit, &limitSink{Sink: sink})
				if errors.Is(err, premium.ErrLimitReached) {
					err = fmt.Errorf("%w: %w", ErrLimitReached, err)
				}
				return cursor, err
			}), nil
		},
		RunLimit: cmp.Or(o.PerPoll, spec.PerPoll),
	})
}
