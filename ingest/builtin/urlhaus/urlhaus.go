// Package urlhaus reads abuse.ch's malware URL and SSL certificate lists
// (MALWARE_URL_SSL): URLhaus' csv_recent, read incrementally by its
// dateadded column, and SSLBL's sslblacklist.csv, a snapshot list of the
// SHA1 fingerprints of certificates seen on malware command and control
// servers.
package urlhaus

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/internal/csvtable"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ioc"
)

// The lists read, and the Source of their indicators.
const (
	// ListURLhaus is incremental: a URL that drops out of the recent
	// window has not been withdrawn, so it is never completed as a list
	// and its sightings live out their retention.
	ListURLhaus = "urlhaus"
	// ListSSLBL is a snapshot list, completed after each whole read.
	ListSSLBL = "sslbl"
)

// The vendor URLs, fixed.
const (
	URLhausURL = "https://urlhaus.abuse.ch/downloads/csv_recent/"
	SSLBLURL   = "https://sslbl.abuse.ch/blacklist/sslblacklist.csv"
)

// Scores: a URL still serving malware, one that no longer does, and a
// certificate abuse.ch saw on a command and control server.
const (
	ScoreOnline  = 80
	ScoreOffline = 50
	ScoreCert    = 80
)

// Caps on the bodies, about ten times their size today (csv_recent, 30
// days of URLs: a few tens of MB; sslblacklist.csv: well under 1 MB), so
// that a runaway answer ends the run instead of filling the day.
const (
	DefaultMaxURLhausBytes = 256 << 20
	DefaultMaxSSLBLBytes   = 32 << 20
)

const dateLayout = "2006-01-02 15:04:05"

// Defaults of the retry knobs of Source.
const (
	DefaultMaxRetries   = feedhttp.DefaultMaxRetries
	DefaultMaxRetryWait = 5 * time.Minute
	// DefaultRetryBackoff is the first wait before repeating a 429 or 5xx
	// that gave no usable Retry-After; the n-th repeat waits n times it.
	DefaultRetryBackoff = 30 * time.Second
)

// Source reads URLhaus and SSLBL. Every request goes through Client (the
// server's egress policy and feed mirror); the URLs are abuse.ch's own,
// fixed.
type Source struct {
	// Client sends the requests; never nil in the server (nil: a client
	// with a 10-minute timeout).
	Client *http.Client
	// Key is the abuse.ch Auth-Key (--abusech-auth-key), sent as the
	// Auth-Key header when set.
	Key string
	// Now is the clock for Retry-After dates; nil: time.Now.
	Now func() time.Time

	// MaxURLhausBytes and MaxSSLBLBytes cap the bodies; 0: the Defaults.
	MaxURLhausBytes, MaxSSLBLBytes int64
	// MaxRetries is how many times a 429 or 5xx is repeated; 0:
	// DefaultMaxRetries, negative: never.
	MaxRetries int
	// MaxRetryWait is the longest Retry-After waited out; a longer one
	// fails the list at once. 0: DefaultMaxRetryWait.
	MaxRetryWait time.Duration
	// RetryBackoff is the wait when no Retry-After is given; 0:
	// DefaultRetryBackoff.
	RetryBackoff time.Duration
}

// state is the cursor: where URLhaus was read up to, and the validators
// of both downloads.
type state struct {
	// Added is the latest dateadded read; IDs the ids of the rows added
	// then, so a row of the same second is read once.
	Added   string              `json:"added,omitempty"`
	IDs     []string            `json:"ids,omitempty"`
	URLhaus feedhttp.Validators `json:"urlhaus"`
	SSLBL   feedhttp.Validators `json:"sslbl"`
}

func parseState(cursor string) state {
	var st state
	if json.Unmarshal([]byte(cursor), &st) != nil {
		return state{}
	}
	return st
}

func (st state) String() string {
	b, _ := json.Marshal(st)
	return string(b)
}

// Fetch reads the URLhaus rows added after the cursor (on the first run,
// those added since since), checkpointing after them, then the whole SSLBL
// list, which it completes. A list that fails does not stop the other:
// Fetch reads both and returns the failure. When both downloads are
// unchanged since the cursor, it returns ioc.ErrUnchanged.
func (s *Source) Fetch(ctx context.Context, cursor string, since time.Time, sink ioc.Sink) (string, error) {
	st := parseState(cursor)
	var failed []error
	unchangedU, err := s.fetchURLhaus(ctx, s.getter("urlhaus"), &st, since, sink)
	if err != nil {
		if !isFetchError(err) { // the run ends, or the sink failed
			return st.String(), err
		}
		failed = append(failed, err)
	}
	unchangedS, err := s.fetchSSLBL(ctx, s.getter("sslbl"), &st, sink)
	if err != nil {
		if !isFetchError(err) {
			return st.String(), err
		}
		failed = append(failed, err)
	}
	switch {
	case len(failed) == 2:
		return st.String(), fmt.Errorf("%w; and %v", failed[0], failed[1])
	case len(failed) == 1:
		return st.String(), failed[0]
	case unchangedU && unchangedS:
		return st.String(), ioc.ErrUnchanged
	}
	return st.String(), nil
}

func isFetchError(err error) bool {
	var fe *ioc.FetchError
	return errors.As(err, &fe)
}

// fetchURLhaus reads csv_recent and moves st past what it handed over.
func (s *Source) fetchURLhaus(ctx context.Context, g *feedhttp.Getter, st *state, since time.Time, sink ioc.Sink) (unchanged bool, err error) {
	resp, err := g.Get(ctx, URLhausURL, st.URLhaus)
	if err != nil {
		return false, err
	}
	defer feedhttp.Close(resp)
	if resp.StatusCode == http.StatusNotModified {
		return true, nil
	}
	wire := feedhttp.NewBody(sink, resp, feedhttp.Or(s.MaxURLhausBytes, DefaultMaxURLhausBytes))
	next, err := parseURLhaus(ctx, wire, *st, since, sink)
	if err != nil {
		return false, g.BodyFailure(ctx, "the list", wire, err)
	}
	next.URLhaus = feedhttp.ValidatorsOf(resp)
	*st = next
	// csv_recent lists the newest first, so no row before the last is a
	// point the next run could resume from: checkpoint the whole file.
	return false, sink.Checkpoint(ctx, st.String())
}

// parseURLhaus reads a URLhaus CSV download and hands a URL indicator to
// sink for each row added after after's cursor (when it has none, since
// bounds the rows), returning the state moved past the rows read.
func parseURLhaus(ctx context.Context, r io.Reader, after state, since time.Time, sink ioc.Sink) (state, error) {
	t, err := csvtable.Open(r, "id", "dateadded", "url")
	if err != nil {
		return after, badFormat("urlhaus", "unable to read the csv_recent header: %w", err)
	}
	var from time.Time
	if after.Added != "" {
		from, err = time.Parse(dateLayout, after.Added)
		if err != nil {
			after.Added, after.IDs = "", nil
		}
	}
	next := after
	for {
		rec, line, err := t.Next()
		if err == io.EOF {
			return next, nil
		}
		if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
			sink.Rejected(line, "not a CSV record: "+pe.Err.Error())
			continue
		}
		if err != nil {
			return after, badFormat("urlhaus", "unable to read the csv_recent rows: %w", err)
		}
		id, added := t.Get(rec, "id"), t.Get(rec, "dateadded")
		at, perr := time.Parse(dateLayout, strings.TrimSuffix(added, " UTC"))
		switch {
		case id == "":
			sink.Rejected(line, "no id")
			continue
		case perr != nil:
			sink.Rejected(line, fmt.Sprintf("dateadded %q is not a date", added))
			continue
		case after.Added != "" && (at.Before(from) || at.Equal(from) && slices.Contains(after.IDs, id)):
			continue // read by an earlier run
		case after.Added == "" && !since.IsZero() && at.Before(since):
			continue // before the backfill window
		}
		v, err := ioc.Normalize(ioc.URL, t.Get(rec, "url"))
		if err != nil {
			sink.Rejected(line, err.Error())
			continue
		}
		score := ScoreOffline
		if strings.EqualFold(t.Get(rec, "url_status"), "online") {
			score = ScoreOnline
		}
		ind := ioc.Indicator{Kind: ioc.URL, Value: v, Source: ListURLhaus, Score: score,
			Tags: tags(t.Get(rec, "threat"), t.Get(rec, "tags"))}
		if err := sink.Indicator(ctx, ind); err != nil {
			return after, &feedhttp.SinkError{Err: err}
		}
		next.advance(at, id)
	}
}

// advance moves the cursor to a row added at at with id.
func (st *state) advance(at time.Time, id string) {
	stamp := at.UTC().Format(dateLayout)
	cur, err := time.Parse(dateLayout, st.Added)
	switch {
	case st.Added == "" || err != nil || at.After(cur):
		st.Added, st.IDs = stamp, []string{id}
	case at.Equal(cur) && !slices.Contains(st.IDs, id):
		st.IDs = append(slices.Clip(st.IDs), id)
	}
}

// fetchSSLBL reads the whole SSLBL list and completes it.
func (s *Source) fetchSSLBL(ctx context.Context, g *feedhttp.Getter, st *state, sink ioc.Sink) (unchanged bool, err error) {
	resp, err := g.Get(ctx, SSLBLURL, st.SSLBL)
	if err != nil {
		return false, err
	}
	defer feedhttp.Close(resp)
	if resp.StatusCode == http.StatusNotModified {
		return true, nil
	}
	wire := feedhttp.NewBody(sink, resp, feedhttp.Or(s.MaxSSLBLBytes, DefaultMaxSSLBLBytes))
	if err := ParseSSLBL(ctx, wire, sink); err != nil {
		return false, g.BodyFailure(ctx, "the list", wire, err)
	}
	ioc.ListComplete(sink, ListSSLBL)
	st.SSLBL = feedhttp.ValidatorsOf(resp)
	return false, sink.Checkpoint(ctx, st.String())
}

// ParseSSLBL reads sslblacklist.csv and hands a certificate fingerprint
// indicator to sink for each row.
func ParseSSLBL(ctx context.Context, r io.Reader, sink ioc.Sink) error {
	t, err := csvtable.Open(r, "sha1")
	if err != nil {
		return badFormat("sslbl", "unable to read the sslblacklist.csv header: %w", err)
	}
	for {
		rec, line, err := t.Next()
		if err == io.EOF {
			return nil
		}
		if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
			sink.Rejected(line, "not a CSV record: "+pe.Err.Error())
			continue
		}
		if err != nil {
			return badFormat("sslbl", "unable to read the sslblacklist.csv rows: %w", err)
		}
		v, err := ioc.Normalize(ioc.CertSHA1, t.Get(rec, "sha1"))
		if err != nil {
			sink.Rejected(line, err.Error())
			continue
		}
		ind := ioc.Indicator{Kind: ioc.CertSHA1, Value: v, Source: ListSSLBL, Score: ScoreCert,
			Tags: tags(reasonTag(t.Get(rec, "listingreason")))}
		if err := sink.Indicator(ctx, ind); err != nil {
			return &feedhttp.SinkError{Err: err}
		}
	}
}

// reasonTag turns a listing reason ("Rhadamanthys C&C", "CobaltStrike
// C&C") into the family it names.
func reasonTag(reason string) string {
	r := strings.TrimSpace(reason)
	if base, ok := cutSuffixFold(r, " C&C"); ok && base != "" {
		return base
	}
	return r
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return strings.TrimSpace(s[:len(s)-len(suffix)]), true
	}
	return s, false
}

// tags splits comma-separated lists of tags into lower-case tags, without
// duplicates and without abuse.ch's literal "None".
func tags(lists ...string) []string {
	var out []string
	for _, l := range lists {
		for _, t := range strings.Split(l, ",") {
			t = strings.ToLower(strings.Join(strings.Fields(t), " "))
			if t == "" || t == "none" || slices.Contains(out, t) {
				continue
			}
			out = append(out, t)
		}
	}
	return out
}

func badFormat(list, format string, a ...any) error {
	return ioc.Fail(ioc.FetchingDataError, fmt.Errorf(list+": "+format, a...))
}

// getter sends abuse.ch's GETs for who, with the Auth-Key when one is set.
func (s *Source) getter(who string) *feedhttp.Getter {
	g := &feedhttp.Getter{
		Who:          who,
		Client:       s.Client,
		Header:       http.Header{"User-Agent": {"tifeeds"}},
		Secret:       s.Key,
		Now:          s.Now,
		MaxRetries:   s.MaxRetries,
		MaxRetryWait: feedhttp.Or(s.MaxRetryWait, DefaultMaxRetryWait),
		Backoff:      feedhttp.Or(s.RetryBackoff, DefaultRetryBackoff),
		Credentials:  "abuse.ch asks for an Auth-Key: set --abusech-auth-key (TIFEEDS_ABUSECH_AUTH_KEY)",
	}
	if s.Key != "" {
		g.Header.Set("Auth-Key", s.Key)
		g.Credentials = "abuse.ch refused the Auth-Key set by --abusech-auth-key (TIFEEDS_ABUSECH_AUTH_KEY)"
	}
	return g
}
