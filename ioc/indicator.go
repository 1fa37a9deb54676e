// Package ioc is the vocabulary of indicators of compromise: their kinds, the
// record a feed source yields, and the contract between sources and the
// ingestion runner. It imports nothing of ours, so every source can use it.
package ioc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kind is the type of an indicator's value.
type Kind string

// The kinds of indicator the store keeps. The strings are the stored values.
const (
	URL    Kind = "url"
	IP     Kind = "ip"
	Domain Kind = "domain"
	MD5    Kind = "md5"
	SHA1   Kind = "sha1"
	SHA256 Kind = "sha256"
	Rule   Kind = "rule"
)

// Kinds lists every kind, in display order.
var Kinds = []Kind{URL, IP, Domain, MD5, SHA1, SHA256, Rule}

// Indicator is one report of a value by a source. Value is normalised (see
// Normalize) before it reaches a sink.
type Indicator struct {
	Kind   Kind
	Value  string
	Source string // name of the threat or sub-source inside the feed
	Score  int    // 0..100
	Tags   []string
	// ValidUntil, when set, fixes the expiry instead of the feed's retention.
	ValidUntil time.Time
	// Revoked reports that the source withdrew this indicator: the runner
	// removes the feed's sighting instead of storing one.
	Revoked bool
}

// Sink receives what a source reads. The runner implements it; sources never
// touch the store.
type Sink interface {
	// Indicator hands over one indicator. An error aborts the fetch.
	Indicator(ctx context.Context, ind Indicator) error
	// Rejected counts an input record that was not usable, with its position
	// (line or object number, 1-based) and the reason.
	Rejected(position int64, reason string)
	// Checkpoint says that everything handed over so far belongs before
	// cursor. The sink stores the cursor together with that data (at the
	// latest when the run's writes are flushed), never ahead of it, so a
	// later run may resume from the last cursor stored.
	Checkpoint(ctx context.Context, cursor string) error
}

// FailureKind names why a fetch failed. The strings are the spec's status
// messages, shown as they are.
type FailureKind string

// The failure kinds of the spec's Errors section.
const (
	InvalidCredentials   FailureKind = "Invalid Credentials"
	InvalidURL           FailureKind = "Invalid URL"
	InvalidCollectionURL FailureKind = "Invalid collection URL"
	ConnectionError      FailureKind = "Connection Error"
	FetchingDataError    FailureKind = "Fetching Data Error"
	SurpassedQueryLimit  FailureKind = "Surpassed Query Limit"
	FailedToConnect      FailureKind = "Failed to connect to feed source"
)

// FetchError is a failed fetch with the kind the feed's status shows.
type FetchError struct {
	Kind FailureKind
	Err  error
}

func (e *FetchError) Error() string { return fmt.Sprintf("%s: %v", e.Kind, e.Err) }
func (e *FetchError) Unwrap() error { return e.Err }

// Fail wraps err as a FetchError of the given kind.
func Fail(kind FailureKind, err error) error { return &FetchError{Kind: kind, Err: err} }

// FailureOf returns the kind of a FetchError in err's chain, or
// FetchingDataError for any other error.
func FailureOf(err error) FailureKind {
	var fe *FetchError
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return FetchingDataError
}
