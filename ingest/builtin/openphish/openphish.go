// Package openphish reads the OpenPhish community feed
// (https://openphish.com/feed.txt): one phishing URL per line, the whole
// current list each time. Each URL becomes a url indicator exactly as
// listed (OpenPhish flags exact URLs, never whole sites: no domain is
// derived), score 80, tag phishing.
package openphish

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// FeedURL is the vendor's feed, fixed; the server's mirror may serve it.
const FeedURL = "https://openphish.com/feed.txt"

// List is the Source of the indicators, and the snapshot list that expires.
const List = "openphish"

// Defaults of the Source's zero knobs.
const (
	// DefaultMaxBytes bounds the body: the feed is some hundred kilobytes,
	// so 32 MiB is far beyond any real list and still bounds a broken one.
	DefaultMaxBytes = 32 << 20
	// DefaultMaxRetries is how many times one 429 or 5xx is waited out.
	DefaultMaxRetries = 2
	// DefaultMaxRetryWait caps the Retry-After that is waited out; a longer
	// one fails the run, the next poll tries again.
	DefaultMaxRetryWait = 2 * time.Minute
	// DefaultRetryBackoff is the wait before repeating a 429 or 5xx that
	// named no Retry-After; the n-th repeat waits n times it.
	DefaultRetryBackoff = time.Second
	// maxLine bounds one line; a longer one is rejected.
	maxLine = 64 << 10
)

// Score and tag of every indicator (CATALOG.md).
const (
	Score = 80
	Tag   = "phishing"
)

// Source reads OpenPhish. Every request goes through Client (the server's
// egress policy and feed mirror); the URL is the vendor's own, fixed.
type Source struct {
	feedhttp.Settings
	// Test knobs; zero takes the default. MaxRetries negative: never
	// repeat.
	MaxBytes int64
}

// Fetch reads the list unless it is unchanged since the request's cursor.
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads the whole current list, unless it is unchanged since cursor
// (ETag / Last-Modified): then it returns ioc.ErrUnchanged and reads
// nothing. since is unused: the feed is a snapshot.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	cursor := req.Cursor
	g := &feedhttp.Getter{Who: "openphish", Settings: s.Settings.Or(feedhttp.Settings{
		MaxRetries: DefaultMaxRetries, MaxRetryWait: DefaultMaxRetryWait, RetryBackoff: DefaultRetryBackoff})}
	// A cursor we cannot read only costs a full download.
	resp, err := g.Get(ctx, FeedURL, feedhttp.ParseValidators(cursor))
	if err != nil {
		return cursor, err
	}
	defer feedhttp.Close(resp)
	if resp.StatusCode == http.StatusNotModified {
		return cursor, ioc.ErrUnchanged
	}
	body := feedhttp.NewBody(sink, resp, feedhttp.Or(s.MaxBytes, DefaultMaxBytes))
	if err := read(ctx, body, sink); err != nil {
		// What came was handed over, but the list is not complete: the run
		// fails, so nothing of it expires.
		return cursor, g.BodyFailure(ctx, "the list", body, err)
	}
	sink.ListComplete(List, time.Time{})
	return feedhttp.ValidatorsOf(resp).String(), nil
}

// read hands every URL of body to sink. Errors of the sink come back as
// feedhttp.SinkError; any other error is the body's.
func read(ctx context.Context, body io.Reader, sink source.Sink) error {
	br := bufio.NewReaderSize(body, 64<<10)
	for line := int64(1); ; line++ {
		raw, err := readLine(br)
		if errors.Is(err, errLongLine) {
			sink.Rejected(line, fmt.Sprintf("a line longer than %d bytes", maxLine))
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if v := strings.TrimSpace(raw); v != "" && !strings.HasPrefix(v, "#") {
			value, nerr := ioc.Normalize(ioc.URL, v)
			if nerr != nil {
				sink.Rejected(line, nerr.Error())
			} else if err := sink.Indicator(ctx, ioc.Indicator{Kind: ioc.URL, Value: value, Source: List,
				Score: Score, Tags: []string{Tag}}); err != nil {
				return &feedhttp.SinkError{Err: err}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

var errLongLine = errors.New("line too long")

// readLine reads one line without its end; a line longer than maxLine is
// read to its end and reported as errLongLine.
func readLine(br *bufio.Reader) (string, error) {
	var sb strings.Builder
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if sb.Len()+len(chunk) > maxLine {
			long = true
		} else {
			sb.Write(chunk)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		if long {
			if err == nil {
				return "", errLongLine
			}
			return "", err // a long last line: the list ends there anyway
		}
		return strings.TrimRight(sb.String(), "\r\n"), err
	}
}

// Kind declares the PhishingURLFeed kind.
func Kind() source.Kind {
	return feedhttp.VendorKind(string(builtin.PhishingURLFeed), func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
}
