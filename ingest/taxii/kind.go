package taxii

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// Category is the custom category of TAXII feeds (store.CategoryTAXII).
const Category = "TAXII"

// Options tunes the TAXII kinds; zero values take the client's defaults.
type Options struct {
	PageSize int // objects asked per page; DefaultPageSize (1,000)
	// Per-run caps: a run stops after the page that reaches one of them,
	// checkpointed, as a success with a note; the next run goes on from
	// the cursor. Defaults: DefaultMaxPages (5,000), DefaultMaxObjects
	// (500,000), DefaultMaxRunTime (30 min).
	MaxPages   int
	MaxObjects int64
	MaxRunTime time.Duration
	// Bounds of one answer: its body on the wire and decompressed
	// (DefaultMaxPageBytes, 64 MiB), and one JSON value in it
	// (DefaultMaxValueBytes, 4 MiB). Over them, the run fails with
	// Fetching Data Error.
	MaxPageBytes  int64
	MaxValueBytes int64
}

// Kind declares the custom TAXII 2.1 category: collection URLs are checked
// against the server's discovery and collections on create and edit, and
// each run asks for what was added after the cursor (the last
// X-TAXII-Date-Added-Last), never before the backfill bound.
func Kind(o Options) source.Kind { return kind(Category, o) }

// DarkWebKind declares the dark-web intelligence premium kind, a TAXII 2.1
// collection too.
func DarkWebKind(o Options) source.Kind { return kind(string(premium.DarkWebTAXII), o) }

func kind(key string, o Options) source.Kind {
	return source.Kind{
		Key: key,
		New: func(e source.Env) source.Source { return &Source{HTTP: e.Client, Options: o} },
		Validate: func(ctx context.Context, e source.Env, feed source.Feed) error {
			err := (&Source{HTTP: e.Client, Options: o}).client(feed).ValidateCollectionURL(ctx, feed.URL)
			var fe *ioc.FetchError
			if !errors.As(err, &fe) {
				return err
			}
			field := "collectionUrl"
			if fe.Kind == ioc.InvalidCredentials {
				field = "password"
			}
			return &source.Invalid{Field: field, Err: fmt.Errorf("%s: %v", fe.Kind, fe.Err)}
		},
	}
}

// Source reads the TAXII 2.1 collection at the feed's URL.
type Source struct {
	HTTP *http.Client
	Options
}

func (s *Source) client(feed source.Feed) *Client {
	return &Client{HTTP: s.HTTP, Username: feed.Username, Password: feed.Password, PageSize: s.PageSize,
		MaxPages: s.MaxPages, MaxObjects: s.MaxObjects, MaxRunTime: s.MaxRunTime,
		MaxPageBytes: s.MaxPageBytes, MaxValueBytes: s.MaxValueBytes}
}

// Fetch asks for what was added after the cursor, never before req.Since. A
// run stopped at a per-run cap ends with a *source.RunCapped.
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	c := s.client(req.Feed)
	return source.Finish(ctx, sink, func(sink source.Sink) (string, error) {
		cursor, err := c.Fetch(ctx, req.Feed.URL, AddedAfter(req.Cursor, req.Since), sink)
		if errors.Is(err, ErrRunCapped) {
			// The note is the client's message without its package prefix.
			err = &source.RunCapped{Note: strings.TrimPrefix(err.Error(), "taxii: "), Err: err}
		}
		return cursor, err
	})
}
