package graph

import (
	"context"
	"errors"
	"strconv"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

func (r *Resolver) me(ctx context.Context) (*store.User, error) {
	return auth.UserFrom(ctx)
}

func (r *Resolver) apiKeys(ctx context.Context) ([]*store.APIKey, error) {
	u, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := r.Store.APIKeys(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out := make([]*store.APIKey, len(keys))
	for i := range keys {
		out[i] = &keys[i]
	}
	return out, nil
}

func (r *Resolver) createAPIKey(ctx context.Context, name string, userID *string) (*model.NewAPIKey, error) {
	caller, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	owner := caller.ID
	if userID != nil {
		id, err := parseID("userId", *userID)
		if err != nil {
			return nil, err
		}
		if id != caller.ID {
			if caller.Scope != store.ScopeRoot {
				return nil, auth.ErrForbidden
			}
			if _, err := r.Store.UserByID(ctx, id); err != nil {
				return nil, err
			}
			owner = id
		}
	}
	if name == "" {
		return nil, store.Invalid("name", "must not be empty")
	}
	key, plain, err := r.Store.CreateAPIKey(ctx, owner, name, "")
	if err != nil {
		return nil, err
	}
	return &model.NewAPIKey{APIKey: key, Key: plain}, nil
}

func (r *Resolver) revokeAPIKey(ctx context.Context, id string) (bool, error) {
	caller, err := auth.UserFrom(ctx)
	if err != nil {
		return false, err
	}
	keyID, err := parseID("id", id)
	if err != nil {
		return false, err
	}
	if err := r.Store.RevokeAPIKey(ctx, caller.ID, keyID); err != nil {
		return false, err
	}
	// The key's open websockets, here and on other instances, close.
	r.Events.PublishRevocation(events.Revocation{UserID: caller.ID})
	return true, nil
}

// parseID reads a numeric id argument, naming the argument when it is not one.
func parseID(field, id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, store.Invalid(field, "%q is not a valid id", id)
	}
	return n, nil
}

var errNotImplemented = errors.New("not implemented yet")
