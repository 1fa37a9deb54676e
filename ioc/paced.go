package ioc

import (
	"strings"
)

// SubFailure is one failed sub-request of a source that reads several
// (one risk list, one threat list).
type SubFailure struct {
	Name string // the sub-request as the user knows it: "risk list hash"
	Err  error
}

// PartialFailure is the error of a fetch some of whose sub-requests failed
// while the others were read, handed over and checkpointed: the run ends
// with the failure's status (the kind of the first failed sub-request) and
// a detail naming each failed one, and still keeps what the others brought
// (the source checkpoints its cursor, with the failed ones not moved on,
// before it returns). The lists the others read completely still expire
// what they dropped: the unit of a snapshot is the list.
type PartialFailure struct {
	Failed []SubFailure
}

// Partial returns a *PartialFailure of failed, or nil when it is empty.
func Partial(failed []SubFailure) error {
	if len(failed) == 0 {
		return nil
	}
	return &PartialFailure{Failed: failed}
}

func (e *PartialFailure) Error() string {
	var b strings.Builder
	for i, f := range e.Failed {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Name)
		b.WriteString(" failed: ")
		b.WriteString(f.Err.Error())
	}
	return b.String()
}

// Unwrap returns every sub-request's error, so that FailureOf gives the
// kind of the first one and errors.Is finds a cancelled run.
func (e *PartialFailure) Unwrap() []error {
	errs := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		errs[i] = f.Err
	}
	return errs
}

// Names lists the failed sub-requests.
func (e *PartialFailure) Names() []string {
	names := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		names[i] = f.Name
	}
	return names
}
