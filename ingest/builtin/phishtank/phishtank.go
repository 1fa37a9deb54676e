// Package phishtank reads PhishTank's online-valid database
// (PHISHING_URL_DATABASE): every verified phishing URL that is online now,
// published whole each hour as one gzip-compressed JSON array of about
// 50 MB. It is a snapshot list: a URL gone from the database expires at
// the next complete read.
package phishtank

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// List is the Source of every indicator, the snapshot list it completes.
const List = "phishtank"

// Score is the score of every URL: PhishTank lists only phish its
// community verified, and still online.
const Score = 80

const (
	// DefaultMaxBytes caps the uncompressed database: ten times its size
	// today (about 50 MB), so a growing list still fits while a runaway or
	// hostile body (a gzip bomb) ends the run instead of the disk or the
	// day.
	DefaultMaxBytes = 512 << 20
	// maxWireBytes caps the compressed download likewise.
	maxWireBytes = 256 << 20
	// userAgent names us, as PhishTank asks of bulk downloaders.
	userAgent = "tifeeds (phishtank online-valid)"
)

// Defaults of the retry knobs of Source.
const (
	DefaultMaxRetries   = feedhttp.DefaultMaxRetries
	DefaultMaxRetryWait = 5 * time.Minute
	// DefaultRetryBackoff is the first wait before repeating a 429 or 5xx
	// that gave no usable Retry-After; the n-th repeat waits n times it.
	DefaultRetryBackoff = 30 * time.Second
)

// Source reads PhishTank's online-valid database. Every request goes
// through Client (the server's egress policy and feed mirror); the URLs are
// PhishTank's own, fixed.
type Source struct {
	feedhttp.Settings // Client: never nil in the server

	// MaxBytes caps the uncompressed database; 0: DefaultMaxBytes.
	MaxBytes int64
}

// URL returns the address of the database for key ("" for keyless).
func URL(key string) string {
	if key == "" {
		return "https://data.phishtank.com/data/online-valid.json.gz"
	}
	return "https://data.phishtank.com/data/" + url.PathEscape(key) + "/online-valid.json.gz"
}

// Fetch reads the database with the app key (req.Feed.Key), if any.
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads the whole database and hands every URL to sink, then
// completes the list. The cursor holds the ETag and Last-Modified of the
// database read: when PhishTank answers 304 to them, Fetch returns
// ioc.ErrUnchanged and downloads nothing. since is not used: a snapshot
// has no history to bound.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	// key is the PhishTank app key (--phishtank-app-key), "" when unset:
	// the keyless download works, within a few downloads a day.
	cursor, key := req.Cursor, req.Feed.Key
	// The app key goes in the URL path: every message masks it.
	g := &feedhttp.Getter{Who: "phishtank", Header: http.Header{"User-Agent": {userAgent}}, Secret: key,
		Settings: s.Settings.Or(feedhttp.Settings{MaxRetryWait: DefaultMaxRetryWait, RetryBackoff: DefaultRetryBackoff})}
	resp, err := g.Get(ctx, URL(key), feedhttp.ParseValidators(cursor))
	if err != nil {
		return cursor, err
	}
	defer feedhttp.Close(resp)
	if resp.StatusCode == http.StatusNotModified {
		return cursor, ioc.ErrUnchanged
	}
	wire := feedhttp.NewBody(sink, resp, maxWireBytes)
	data, err := decompress(wire)
	if err != nil {
		return cursor, s.bodyFailure(ctx, g, wire, nil, err)
	}
	capped := feedhttp.Cap(data, feedhttp.Or(s.MaxBytes, DefaultMaxBytes))
	if err := Parse(ctx, capped, sink); err != nil {
		return cursor, s.bodyFailure(ctx, g, wire, capped, err)
	}
	sink.ListComplete(List, time.Time{})
	return feedhttp.ValidatorsOf(resp).String(), nil
}

// bodyFailure tells why reading the body failed: the run ending, the
// connection or the wire's cap (g.BodyFailure), the uncompressed cap, bad
// gzip, or the data itself. An error of the sink passes as it is.
func (s *Source) bodyFailure(ctx context.Context, g *feedhttp.Getter, wire, data *feedhttp.Body, err error) error {
	if f := g.ReadFailure(ctx, "the download", wire); f != nil {
		return f
	}
	switch {
	case data != nil && data.Exceeded():
		return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("phishtank: the database is over %d MiB uncompressed", data.Max()>>20))
	case data == nil || data.Err() != nil:
		return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("phishtank: the download is not valid gzip: %w", err))
	}
	return g.BodyFailure(ctx, "the database", data, err)
}

func badFormat(format string, a ...any) error {
	return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("phishtank: "+format, a...))
}

// decompress reads a gzip body, or a body already decompressed on the way
// (a mirror answering with Content-Encoding: gzip, which the transport
// undoes).
func decompress(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil && len(magic) < 2 {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if magic[0] != 0x1f || magic[1] != 0x8b {
		return br, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, err
	}
	// One file, one member: a trailing member would be another database.
	zr.Multistream(false)
	return zr, nil
}

// record is what we read of one database entry. details (hosting IP
// addresses) and target are context, never indicators: target holds brand
// names such as "Amazon.com" that a parser must not take for domains.
type record struct {
	URL      string `json:"url"`
	Target   string `json:"target"`
	Verified string `json:"verified"`
	Online   string `json:"online"`
}

// Parse reads an online-valid.json array from r and hands a URL indicator
// per record to sink, one record at a time (the array is never held).
// Records that are not usable are rejected with their 1-based position.
func Parse(ctx context.Context, r io.Reader, sink source.Sink) error {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return badFormat("unable to read the database: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return badFormat("the database is not a JSON array (starts with %v)", tok)
	}
	var pos int64
	for dec.More() {
		pos++
		var rec record
		if err := dec.Decode(&rec); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				return badFormat("unable to read record %d: %w", pos, err)
			}
			// A well-formed record of another shape: the decoder has
			// consumed it whole.
			sink.Rejected(pos, "not a PhishTank record: "+te.Error())
			continue
		}
		ind, reason := indicator(rec)
		if reason != "" {
			sink.Rejected(pos, reason)
			continue
		}
		if err := sink.Indicator(ctx, ind); err != nil {
			return &feedhttp.SinkError{Err: err}
		}
	}
	if _, err := dec.Token(); err != nil {
		return badFormat("unable to read the end of the database: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badFormat("data after the end of the database")
	}
	return nil
}

func indicator(rec record) (ioc.Indicator, string) {
	if no(rec.Verified) || no(rec.Online) {
		return ioc.Indicator{}, "skipped: not verified and online"
	}
	if strings.TrimSpace(rec.URL) == "" {
		return ioc.Indicator{}, "no url"
	}
	v, err := ioc.Normalize(ioc.URL, rec.URL)
	if err != nil {
		return ioc.Indicator{}, err.Error()
	}
	tags := []string{"phishing"}
	if t := strings.ToLower(strings.Join(strings.Fields(rec.Target), " ")); t != "" && t != "none" && t != "other" {
		tags = append(tags, "target:"+t)
	}
	return ioc.Indicator{Kind: ioc.URL, Value: v, Source: List, Score: Score, Tags: tags}, ""
}

// no reports a yes/no field that says no; an absent one says nothing.
func no(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return s != "" && s != "yes"
}

// Kind declares the PhishingURLDatabase kind.
func Kind() source.Kind {
	return feedhttp.VendorKind(string(builtin.PhishingURLDatabase), func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
}
