// Package ingest runs the feeds: it schedules one job per enabled feed,
// fetches each through its Source into batched writes, records every run,
// drives the status machine of the spec and publishes every change on a Bus.
package ingest

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/store"
)

// Registry maps a feed's category (custom feeds) or kind (built-in and
// premium feeds) to its declaration, and builds the kinds' sources with
// what the server offers them.
type Registry struct {
	mu    sync.RWMutex
	kinds map[string]source.Kind
	env   source.Env
	keys  BuiltinKeys
}

// RegistryOptions are what the kinds of a registry are built with.
type RegistryOptions struct {
	// Client is the egress client (egress.NewClient): the one client every
	// fetch of a URL the user typed goes through, so that one policy holds
	// for all. Nil means egress.NewClient(egress.Options{}).
	Client *http.Client
	// VendorClient is the client of the fixed vendor APIs
	// (egress.NewVendorClient, or the feed mirror); nil: Client.
	VendorClient *http.Client
	// Keys are the built-in kinds' key settings.
	Keys BuiltinKeys
	Now  func() time.Time // nil: time.Now
}

// NewRegistry returns an empty registry built with o.
func NewRegistry(o RegistryOptions) *Registry {
	if o.Client == nil {
		o.Client = egress.NewClient(egress.Options{})
	}
	if o.VendorClient == nil {
		o.VendorClient = o.Client
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Registry{kinds: map[string]source.Kind{}, keys: o.Keys,
		env: source.Env{Client: o.Client, VendorClient: o.VendorClient, Now: o.Now}}
}

// NewRegistryWithClient returns an empty registry whose kinds fetch through
// client, vendor APIs included (see RegistryOptions.Client).
func NewRegistryWithClient(client *http.Client) *Registry {
	return NewRegistry(RegistryOptions{Client: client})
}

// Client is the HTTP client the registry's sources fetch through.
func (r *Registry) Client() *http.Client { return r.env.Client }

// Register adds or replaces each kind, by its key.
func (r *Registry) Register(kinds ...source.Kind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range kinds {
		r.kinds[k.Key] = k
	}
}

// Lookup returns the kind named key.
func (r *Registry) Lookup(key string) (source.Kind, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.kinds[key]
	return k, ok
}

// Has reports whether this build fetches the kind or category named key.
func (r *Registry) Has(key string) bool {
	_, ok := r.Lookup(key)
	return ok
}

// Validate checks a feed's settings with its kind's validation (a TAXII
// collection URL against its server), when it has one. A setting the user
// must change comes back as a *store.ValidationError naming it.
func (r *Registry) Validate(ctx context.Context, key string, feed source.Feed) error {
	k, ok := r.Lookup(key)
	if !ok || k.Validate == nil {
		return nil
	}
	err := k.Validate(ctx, r.env, feed)
	var invalid *source.Invalid
	if errors.As(err, &invalid) {
		return store.Invalid(invalid.Field, "%v", invalid.Err)
	}
	return err
}

// newSource builds the source of kind k.
func (r *Registry) newSource(k source.Kind) source.Source { return k.New(r.env) }
