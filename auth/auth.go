// Package auth says who is calling and what they may do. The server puts the
// caller in the request context; resolvers and handlers ask it here.
package auth

import (
	"context"
	"errors"
	"fmt"

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
//
// A session of a user whose password root reset gets ErrPasswordChange:
// it may do nothing but choose a new password (see Caller).
func UserFrom(ctx context.Context) (*store.User, error) {
	u, err := Caller(ctx)
	if err != nil {
		return nil, err
	}
	if u.MustChangePassword {
		return nil, ErrPasswordChange
	}
	return u, nil
}

// ErrPasswordChange is forbidden: the caller must choose a new password.
var ErrPasswordChange = fmt.Errorf("%w: %w", ErrForbidden, store.ErrPasswordChange)

// Caller returns the authenticated user even when they must choose a new
// password: only `me` and `changePassword` use it.
func Caller(ctx context.Context) (*store.User, error) {
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

type sessionKey struct{}

// WithSessionHash records that the caller signed in with the session whose
// token hashes to hash (store.SessionHash).
func WithSessionHash(ctx context.Context, hash string) context.Context {
	return context.WithValue(ctx, sessionKey{}, hash)
}

// SessionHashFrom returns the hash of the caller's session, or "" when the
// caller used an API key.
func SessionHashFrom(ctx context.Context) string {
	h, _ := ctx.Value(sessionKey{}).(string)
	return h
}
