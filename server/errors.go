package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/store"
)

// apiError is the body of every JSON error: {"error": {"code", "message"}}.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// writeJSON writes v as the JSON body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes a JSON error with an explicit status and code.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]apiError{"error": {Code: code, Message: message}})
}

// writeErr maps a domain error to its status and code: the one place REST
// and the other JSON endpoints decide how errors look.
func writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var (
		valErr   *store.ValidationError
		maxBytes *http.MaxBytesError
		body     = apiError{Message: err.Error()}
		status   int
	)
	switch {
	case errors.Is(err, auth.ErrUnauthenticated), errors.Is(err, store.ErrBadCredentials):
		status, body.Code = http.StatusUnauthorized, "unauthenticated"
		body.Message = "valid credentials are required: HTTP basic auth with username and API key"
	case errors.Is(err, auth.ErrForbidden):
		status, body.Code = http.StatusForbidden, "forbidden"
	case errors.As(err, &maxBytes):
		status, body.Code = http.StatusRequestEntityTooLarge, "body_too_large"
	case errors.As(err, &valErr) && valErr.Malformed:
		status, body.Code, body.Field, body.Message = http.StatusBadRequest, "invalid_string", valErr.Field, valErr.Error()
	case errors.As(err, &valErr):
		status, body.Code, body.Field = http.StatusUnprocessableEntity, "invalid_field", valErr.Field
	case errors.Is(err, store.ErrNotFound):
		status, body.Code = http.StatusNotFound, "not_found"
	case errors.Is(err, store.ErrConflict):
		status, body.Code = http.StatusConflict, "conflict"
	case errors.Is(err, context.DeadlineExceeded):
		status, body.Code = http.StatusServiceUnavailable, "timeout"
		body.Message = "the request took longer than the server allows and was stopped"
	case store.IsUnavailable(err):
		slog.ErrorContext(r.Context(), "Request failed: database unavailable", "method", r.Method, "path", r.URL.Path, "error", err)
		writeUnavailable(w)
		return
	default:
		slog.ErrorContext(r.Context(), "Request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		status, body.Code, body.Message = http.StatusInternalServerError, "internal", "internal error"
	}
	writeJSON(w, status, map[string]apiError{"error": body})
}

// writeUnavailable answers 503 while the database cannot be used, without
// the driver's words (they name hosts and files).
func writeUnavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "5")
	writeError(w, http.StatusServiceUnavailable, "database_unavailable", "the database is unavailable; try again later")
}
