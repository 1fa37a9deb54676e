// Package ioc is the vocabulary of indicators of compromise: their kinds, the
// record a feed source yields, and the contract between sources and the
// ingestion runner. It imports nothing of ours, so every source can use it.
package ioc

import (
	"context"
	"errors"
	"io"
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

// ListSink is what a sink of a snapshot source also does. A snapshot source
// reads lists that are published whole each time (PhishTank, OpenPhish, a
// rule set). Once it has handed over the complete current contents of one
// list, it says so with ListComplete, naming the list by the Source of the
// indicators it gave: after the run succeeds, the feed's sightings from that
// source that the run did not hand over are expired. A list that was not
// read to its end (an error, a cap, an unchanged list not downloaded) is
// never named, so nothing of it expires.
type ListSink interface {
	ListComplete(source string)
}

// ListComplete tells sink, when it is a ListSink, that the list named
// source was read to its end.
func ListComplete(sink Sink, source string) {
	if ls, ok := sink.(ListSink); ok {
		ls.ListComplete(source)
	}
}

// ListSinceSink is what a sink of a snapshot source that reads one list
// over several runs also does (a list bigger than one poll's cap, resumed
// from a cursor). Once the last run of such a walk has handed over the end
// of the list, ListCompleteSince names it with since, the start of the
// walk's first run (FetchRequest.Started of that run, kept in the cursor):
// the feed's sightings from that source not handed over since then are
// expired after the run succeeds.
type ListSinceSink interface {
	ListCompleteSince(source string, since time.Time)
}

// ListCompleteSince tells sink, when it is a ListSinceSink, that the list
// named source was read to its end by the runs since since. A sink that
// cannot take it is told nothing: ListComplete would expire what the
// walk's earlier runs handed over.
func ListCompleteSince(sink Sink, source string, since time.Time) {
	if ls, ok := sink.(ListSinceSink); ok {
		ls.ListCompleteSince(source, since)
	}
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

// ProgressSink is what a sink also does that shows how a download goes:
// read bytes of total so far (total is -1 when the server did not say).
type ProgressSink interface {
	Downloaded(read, total int64)
}

// progressEvery is the longest a download that is receiving bytes goes
// without a report, so that a slow one shows its bytes coming in even
// when it is far from the next 64 KiB step.
const progressEvery = time.Second

// ProgressReader reads r and tells sink, when it is a ProgressSink, how
// many bytes were read so far: on the first bytes, then every 64 KiB or
// every second while bytes come, and at the end (EOF, or all of total), so that a run shows
// progress while it downloads and before it parses.
func ProgressReader(sink Sink, r io.Reader, total int64) io.Reader {
	ps, ok := sink.(ProgressSink)
	if !ok {
		return r
	}
	return &progressReader{r: r, sink: ps, total: total}
}

type progressReader struct {
	r           io.Reader
	sink        ProgressSink
	total       int64
	read, shown int64
	shownAt     time.Time
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	if p.read == p.shown {
		return n, err
	}
	now := time.Now()
	whole := p.total > 0 && p.read >= p.total // a decoder may never read on to EOF
	if p.shown == 0 || p.read-p.shown >= 64<<10 || err != nil || whole || now.Sub(p.shownAt) >= progressEvery {
		p.shown, p.shownAt = p.read, now
		p.sink.Downloaded(p.read, p.total)
	}
	return n, err
}
