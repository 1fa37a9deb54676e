// Package auth says who is calling and what they may do. The server puts the
// caller in the request context; resolvers and handlers ask it here.
package auth

import (
	"context"
	"errors"

	"github.com/tifeeds/tifeeds/store"
)

// ErrUnauthenticated means the request carries no valid credentials.
var ErrUnauthenticated = errors.New("authentication required")

// ErrForbidden means the caller's scope is not enough for the operation.
var ErrForbidden = errors.New("your scope does not allow this operation")

type userKey struct{}

// WithUser returns ctx carrying the authenticated user.
func WithUser(ctx context.Context, u *store.User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the authenticated user, or ErrUnauthenticated.
func UserFrom(ctx context.Context) (*store.User, error) {
	u, _ := ctx.Value(userKey{}).(*store.User)
	if u == nil {
		return nil, ErrUnauthenticated
	}
	return u, nil
}

// Require returns the caller when their scope allows what needs scope: root
// allows everything, tenant only tenant-scoped reads.
func Require(ctx context.Context, scope store.Scope) (*store.User, error) {
	u, err := UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	if scope == store.ScopeRoot && u.Scope != store.ScopeRoot {
		return nil, ErrForbidden
	}
	return u, nil
}
