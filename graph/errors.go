package graph

import (
	"context"
	"errors"
	"log/slog"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/store"
)

// Machine-readable error codes, in extensions.code of every error.
const (
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeForbidden       = "FORBIDDEN"
	CodeNotFound        = "NOT_FOUND"
	CodeBadUserInput    = "BAD_USER_INPUT"
	CodeConflict        = "CONFLICT"
	CodeInternal        = "INTERNAL_SERVER_ERROR"
)

// ErrorPresenter maps domain errors to GraphQL errors with a code, once, at
// the edge. Errors it does not know are logged and hidden from the caller.
func ErrorPresenter(ctx context.Context, err error) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)
	var gerr *gqlerror.Error
	if errors.As(err, &gerr) && gerr.Err == nil {
		return gqlErr // gqlgen's own parse and validation errors
	}
	var valErr *store.ValidationError
	code := ""
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		code = CodeUnauthenticated
	case errors.Is(err, auth.ErrForbidden):
		code = CodeForbidden
	case errors.Is(err, store.ErrNotFound):
		code = CodeNotFound
	case errors.Is(err, store.ErrConflict):
		code = CodeConflict
	case errors.As(err, &valErr):
		code = CodeBadUserInput
		if gqlErr.Extensions == nil {
			gqlErr.Extensions = map[string]any{}
		}
		gqlErr.Extensions["field"] = valErr.Field
	default:
		slog.ErrorContext(ctx, "GraphQL resolver failed", "path", gqlErr.Path.String(), "error", err)
		gqlErr.Message = "internal error"
		code = CodeInternal
	}
	if gqlErr.Extensions == nil {
		gqlErr.Extensions = map[string]any{}
	}
	gqlErr.Extensions["code"] = code
	return gqlErr
}

// HasScope implements the @hasScope directive.
func HasScope(ctx context.Context, _ any, next graphql.Resolver, scope store.Scope) (any, error) {
	if _, err := auth.Require(ctx, scope); err != nil {
		return nil, err
	}
	return next(ctx)
}

// NewSchema returns the executable schema with its directives wired.
func NewSchema(r *Resolver) graphql.ExecutableSchema {
	return NewExecutableSchema(Config{
		Resolvers:  r,
		Directives: DirectiveRoot{HasScope: HasScope},
		Complexity: complexity(),
	})
}
