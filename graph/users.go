package graph

import (
	"context"
	"errors"
	"strconv"

	"github.com/tifeeds/tifeeds/store"
)

// UserStore is what the user and API-key resolvers use of the store.
type UserStore interface {
	UserByID(ctx context.Context, id int64) (*store.User, error)
	APIKeys(ctx context.Context, userID int64) ([]store.APIKey, error)
	CreateAPIKey(ctx context.Context, userID int64, name, plain string) (*store.APIKey, string, error)
	RevokeAPIKey(ctx context.Context, userID, keyID int64) error
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
