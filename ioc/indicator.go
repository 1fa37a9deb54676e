// Package ioc is the vocabulary of indicators of compromise: their kinds, the
// record a feed source yields, and the contract between sources and the
// ingestion runner. It imports nothing of ours, so every source can use it.
package ioc

import (
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode"
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
	// CertSHA1 is the SHA1 fingerprint of an X.509 certificate (abuse.ch
	// SSLBL): a kind of its own, since a file with the same SHA1 is another
	// thing entirely.
	CertSHA1 Kind = "cert_sha1"
)

// Kinds lists every kind, in display order.
var Kinds = []Kind{URL, IP, Domain, MD5, SHA1, SHA256, CertSHA1, Rule}

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
	// Text is the full text of a Rule indicator (one IDS signature), kept
	// and searchable; its Value names the rule (see RuleValue). Empty for
	// other kinds.
	Text string
}

// HashKind is the kind of hash a value's length says (32, 40 or 64
// characters: MD5, SHA-1, SHA-256), whatever a feed labels it: feeds put
// SHA-256 values under MD5 labels. ok is false for any other length.
func HashKind(v string) (kind Kind, ok bool) {
	switch len(v) {
	case 32:
		return MD5, true
	case 40:
		return SHA1, true
	case 64:
		return SHA256, true
	}
	return "", false
}

// RuleValue is the value of the Rule indicator for an IDS signature: one
// indicator per signature id, whatever its revision.
func RuleValue(sid int64) string { return "sid:" + strconv.FormatInt(sid, 10) }

// ruleActions are the actions of a Suricata rule other than alert: each
// lets traffic through or stops it, rather than only raising an alert.
var ruleActions = map[string]bool{
	"pass": true, "drop": true, "reject": true, "rejectsrc": true, "rejectdst": true, "rejectboth": true,
}

// AlertOnly returns the rule with alert for its action: what every export
// hands out for a feed the operator has not allowed its actions, which
// then does not decide what passes or is dropped, nor keeps an alert
// quiet (docs/decisions.md, "Who owns a Suricata sid").
func AlertOnly(rule string) string {
	end := strings.IndexFunc(rule, unicode.IsSpace)
	if end < 0 || !ruleActions[rule[:end]] {
		return rule
	}
	// One space after it: suricata-update reads no other separator there.
	return "alert " + strings.TrimLeftFunc(rule[end:], unicode.IsSpace)
}

// ErrUnchanged is what a source returns, with its cursor, when every list
// it reads is unchanged since the cursor (ETag, Last-Modified, a published
// checksum): nothing was downloaded, the run succeeds and says so, and
// nothing expires.
var ErrUnchanged = errors.New("the source has not changed since the last run")

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

// Error is the kind, then what went wrong. An error that says the kind
// already (a failure classified again, or its message wrapped) is not
// prefixed twice: the run's detail shows beside its kind.
func (e *FetchError) Error() string {
	msg := e.Err.Error()
	if strings.HasPrefix(msg, string(e.Kind)+": ") {
		return msg
	}
	return string(e.Kind) + ": " + msg
}
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
