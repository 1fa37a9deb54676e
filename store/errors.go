package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// ErrNotFound is returned when the asked-for record does not exist.
var ErrNotFound = errors.New("not found")

// ErrFeedDisabled is returned by a batch of indicators for a feed that has
// been disabled (or reset, or deleted) since its run started: the batch is
// not applied.
var ErrFeedDisabled = errors.New("the feed was disabled")

// ErrRunClosed is returned by a batch, or by the end of a run, whose run
// record was closed meanwhile (by another instance that found its owner
// gone, or erased by a reset): the run no longer owns its feed, and nothing
// of it is applied.
var ErrRunClosed = errors.New("the run was closed by another instance")

// ErrConflict is returned when a write breaks a uniqueness rule.
var ErrConflict = errors.New("conflict")

// ValidationError is input that breaks a rule, naming the offending field in
// the caller's vocabulary (REST wire names are mapped at the REST edge). It
// is the one "bad field" error of the service: the store's rules, the
// edges' input bounds (package input) and their parameter checks all
// return it, and each edge maps it once.
type ValidationError struct {
	Field   string
	Message string
	// Malformed says the value cannot be taken at all as sent (a NUL byte,
	// over-long: package input's bounds), rather than breaking a rule of
	// its field: REST answers 400 invalid_string, not 422 invalid_field.
	Malformed bool
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Invalid returns a ValidationError for field.
func Invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// ValidationErrors lists the ValidationErrors err holds, alone or joined
// (errors.Join): a check that reports every invalid field at once joins
// one per field.
func ValidationErrors(err error) []*ValidationError {
	var out []*ValidationError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *ValidationError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// IsUnavailable reports whether err says the database cannot be reached or
// cannot take the statement for now (closed, connection lost or refused,
// shutting down, locked, read-only, disk failing), as opposed to a
// statement or data error: callers answer "try again later", not "bad
// request" nor "internal error".
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var (
		netErr     net.Error
		pgErr      *pgconn.PgError
		connectErr *pgconn.ConnectError
		liteErr    sqlite3.Error
	)
	switch {
	case errors.Is(err, sql.ErrConnDone), errors.Is(err, driver.ErrBadConn),
		errors.As(err, &netErr), errors.As(err, &connectErr):
		return true
	case errors.As(err, &pgErr):
		// Class 08: connection exception; 57P0x: shutdown, cannot connect
		// now; 53300: too many connections; 25006: read-only transaction.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P0") ||
			pgErr.Code == "53300" || pgErr.Code == "25006"
	case errors.As(err, &liteErr):
		switch liteErr.Code {
		case sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrIoErr, sqlite3.ErrCantOpen,
			sqlite3.ErrReadonly, sqlite3.ErrFull:
			return true
		}
	}
	// database/sql's own error for a closed *sql.DB has no sentinel.
	return strings.Contains(err.Error(), "sql: database is closed")
}
