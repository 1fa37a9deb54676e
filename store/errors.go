package store

import (
	"errors"
	"fmt"
)

// ErrNotFound is returned when the asked-for record does not exist.
var ErrNotFound = errors.New("not found")

// ErrFeedDisabled is returned by a batch of indicators for a feed that has
// been disabled (or reset, or deleted) since its run started: the batch is
// not applied.
var ErrFeedDisabled = errors.New("the feed was disabled")

// ErrConflict is returned when a write breaks a uniqueness rule.
var ErrConflict = errors.New("conflict")

// ValidationError is input that breaks a rule, naming the offending field in
// the caller's vocabulary (REST wire names are mapped at the REST edge).
type ValidationError struct {
	Field   string
	Message string
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
