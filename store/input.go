// The parts of create and patch inputs every record shares: optional fields,
// paging, name and text checks, and the conflict and not-found errors.

package store

import (
	"fmt"
	"math"
	"strings"

	"github.com/uptrace/bun"
)

// The longest names and free texts a tenant, group, user or view may hold.
const (
	maxNameLen = 255
	maxTextLen = 4096
)

// Opt is one field of a create or patch input. Set says the caller gave the
// field; Null that it was given as null, which resets it to its default.
type Opt[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// Some returns a field given with a value.
func Some[T any](v T) Opt[T] { return Opt[T]{Set: true, Value: v} }

// Null returns a field given as null.
func Null[T any]() Opt[T] { return Opt[T]{Set: true, Null: true} }

// FromPtr returns the field of an input where nil means "not given", as in
// GraphQL input objects.
func FromPtr[T any](p *T) Opt[T] {
	if p == nil {
		return Opt[T]{}
	}
	return Some(*p)
}

// Page selects part of a list sorted by creation. Limit 0 means no limit.
type Page struct {
	Limit, Offset int
}

// NewPage checks optional limit and offset: limit at least 1, offset not
// negative; neither given means the whole list.
func NewPage(limit, offset *int) (Page, error) {
	var p Page
	if limit != nil {
		if *limit < 1 {
			return p, Invalid("limit", "must be at least 1, not %d", *limit)
		}
		p.Limit = *limit
	}
	if offset != nil {
		if *offset < 0 {
			return p, Invalid("offset", "must not be negative, not %d", *offset)
		}
		p.Offset = *offset
	}
	return p, nil
}

func (p Page) apply(q *bun.SelectQuery) *bun.SelectQuery {
	if p.Limit > 0 {
		q = q.Limit(int64(p.Limit))
	} else if p.Offset > 0 {
		q = q.Limit(math.MaxInt64) // SQLite accepts OFFSET only after a LIMIT
	}
	if p.Offset > 0 {
		q = q.Offset(int64(p.Offset))
	}
	return q
}

// conflictError is an ErrConflict with a message fit for API callers.
type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }

func (e *conflictError) Unwrap() error { return ErrConflict }

func conflict(format string, args ...any) error {
	return &conflictError{msg: fmt.Sprintf(format, args...)}
}

// notFoundError is an ErrNotFound naming what was not found.
type notFoundError struct{ what, id string }

func (e *notFoundError) Error() string { return fmt.Sprintf("%s %q not found", e.what, e.id) }

func (e *notFoundError) Unwrap() error { return ErrNotFound }

func requiredName(field string, o Opt[string]) (string, error) {
	if !o.Set || o.Null {
		return "", Invalid(field, "is required")
	}
	v := strings.TrimSpace(o.Value)
	if v == "" {
		return "", Invalid(field, "must not be empty")
	}
	if n := len([]rune(v)); n > maxNameLen {
		return "", Invalid(field, "must have at most %d characters, not %d", maxNameLen, n)
	}
	return v, nil
}

func optionalText(field string, o Opt[string], max int) (string, error) {
	if o.Null {
		return "", nil
	}
	v := strings.TrimSpace(o.Value)
	if n := len([]rune(v)); max > 0 && n > max {
		return "", Invalid(field, "must have at most %d characters, not %d", max, n)
	}
	return v, nil
}
