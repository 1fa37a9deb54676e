package ingest

import (
	"cmp"
	"context"
	"errors"
	"net/http"

	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/taxii"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// TAXIIOptions tunes the TAXII sources; zero values take the client's
// defaults.
type TAXIIOptions struct {
	Client   *http.Client
	PageSize int
}

// RegisterTAXII adds the custom TAXII 2.1 category, and the premium kind
// served over TAXII: collection URLs are
// checked against the server's discovery and collections on create and
// edit, and each run asks for what was added after the cursor (the last
// X-TAXII-Date-Added-Last), never before the backfill bound.
func (r *Registry) RegisterTAXII(o TAXIIOptions) {
	client := func(cfg SourceConfig) *taxii.Client {
		return &taxii.Client{HTTP: cmp.Or(o.Client, r.client), Username: cfg.Username, Password: cfg.Password, PageSize: o.PageSize}
	}
	cat := Category{
		New: func(cfg SourceConfig) (Source, error) {
			c := client(cfg)
			return SourceFunc(func(ctx context.Context, req FetchRequest, sink ioc.Sink) (string, error) {
				return c.Fetch(ctx, cfg.URL, taxii.AddedAfter(req.Cursor, req.Since), sink)
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
