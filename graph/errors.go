package graph

import (
	"context"
	"errors"
	"log/slog"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/feeds"
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
	// CodeTimeout: the request's work passed the server's time limit.
	CodeTimeout = "TIMEOUT"
	// CodeUnavailable: the database cannot be used for now
	// (store.IsUnavailable); REST answers 503 database_unavailable.
	CodeUnavailable = "UNAVAILABLE"
)

// ErrorPresenter maps domain errors to GraphQL errors with a code, once, at
// the edge. Errors it does not know are logged and hidden from the caller.
func ErrorPresenter(ctx context.Context, err error) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)
	var gerr *gqlerror.Error
	if errors.As(err, &gerr) && gerr.Err == nil {
		// gqlgen's own parse and validation errors. Those on a variable's
		// value are the value's fault, like any other bad input.
		if len(gqlErr.Path) > 0 && gqlErr.Path[0] == ast.PathName("variable") {
			gqlErr.Extensions = map[string]any{"code": CodeBadUserInput}
		}
		return gqlErr
	}
	if errs := store.ValidationErrors(err); len(errs) > 1 {
		// One error per invalid field, each with its field, so a form shows
		// every message beside its input; the last is this call's answer.
		for _, e := range errs[:len(errs)-1] {
			graphql.AddError(ctx, e)
		}
		return ErrorPresenter(ctx, graphql.ErrorOnPath(ctx, errs[len(errs)-1]))
	}
	var valErr *store.ValidationError
	code := ""
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		// The request's time limit (or a statement interrupted by it).
		gqlErr.Message = "the request took longer than the server allows and was stopped"
		code = CodeTimeout
	case errors.Is(err, auth.ErrUnauthenticated):
		code = CodeUnauthenticated
	case errors.Is(err, auth.ErrForbidden):
		code = CodeForbidden
	case errors.Is(err, store.ErrNotFound):
		code = CodeNotFound
	case errors.Is(err, store.ErrConflict), errors.Is(err, feeds.ErrAlreadyRunning):
		code = CodeConflict
	case errors.As(err, &valErr):
		code = CodeBadUserInput
		if gqlErr.Extensions == nil {
			gqlErr.Extensions = map[string]any{}
		}
		gqlErr.Extensions["field"] = valErr.Field
	case store.IsUnavailable(err):
		// Like REST's 503: the driver's words name hosts and files.
		slog.ErrorContext(ctx, "GraphQL resolver failed: database unavailable", "path", gqlErr.Path.String(), "error", err)
		gqlErr.Message = "the database is unavailable; try again later"
		code = CodeUnavailable
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
