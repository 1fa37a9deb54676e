package ingest

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/taxii"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// TAXIIOptions tunes the TAXII sources; zero values take the client's
// defaults.
type TAXIIOptions struct {
	Client   *http.Client
	PageSize int // objects asked per page; taxii.DefaultPageSize (1,000)
	// Per-run caps: a run stops after the page that reaches one of them,
	// checkpointed, as a success with a note; the next run goes on from
	// the cursor. Defaults: taxii.DefaultMaxPages (5,000),
	// taxii.DefaultMaxObjects (500,000), taxii.DefaultMaxRunTime (30 min).
	MaxPages   int
	MaxObjects int64
	MaxRunTime time.Duration
	// Bounds of one answer: its body on the wire and decompressed
	// (taxii.DefaultMaxPageBytes, 64 MiB), and one JSON value in it
	// (taxii.DefaultMaxValueBytes, 4 MiB). Over them, the run fails with
	// Fetching Data Error.
	MaxPageBytes  int64
	MaxValueBytes int64
}

// RegisterTAXII adds the custom TAXII 2.1 category, and the premium kind
// served over TAXII: collection URLs are
// checked against the server's discovery and collections on create and
// edit, and each run asks for what was added after the cursor (the last
// X-TAXII-Date-Added-Last), never before the backfill bound.
func (r *Registry) RegisterTAXII(o TAXIIOptions) {
	client := func(cfg SourceConfig) *taxii.Client {
		return &taxii.Client{HTTP: cmp.Or(o.Client, r.client), Username: cfg.Username, Password: cfg.Password, PageSize: o.PageSize,
			MaxPages: o.MaxPages, MaxObjects: o.MaxObjects, MaxRunTime: o.MaxRunTime,
			MaxPageBytes: o.MaxPageBytes, MaxValueBytes: o.MaxValueBytes}
	}
	cat := Category{
		New: func(cfg SourceConfig) (Source, error) {
			c := client(cfg)
			return SourceFunc(func(ctx context.Context, req FetchRequest, sink ioc.Sink) (string, error) {
				cursor, err := c.Fetch(ctx, cfg.URL, taxii.AddedAfter(req.Cursor, req.Since), sink)
				if errors.Is(err, taxii.ErrRunCapped) {
					err = &RunCapped{Note: capNote(err), Err: err}
				}
				return cursor, err
			}), nil
		},
		Validate: func(ctx context.Context, cfg SourceConfig) error {
			err := client(cfg).ValidateCollectionURL(ctx, cfg.URL)
			var fe *ioc.FetchError
			if !errors.As(err, &fe) {
				return err
			}
			field := "collectionUrl"
			if fe.Kind == ioc.InvalidCredentials {
				field = "password"
			}
			return store.Invalid(field, "%s: %v", fe.Kind, fe.Err)
		},
	}
	r.Register(store.CategoryTAXII, cat)
	// The dark-web intelligence premium kind is a TAXII 2.1 collection too.
	r.Register(string(premium.DarkWebTAXII), cat)
}

// capNote is the run's note for a fetch that stopped at a cap: the
// client's message without its package prefix.
func capNote(err error) string {
	return strings.TrimPrefix(err.Error(), "taxii: ")
}
