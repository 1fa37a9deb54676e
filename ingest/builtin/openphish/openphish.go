// Package openphish reads the OpenPhish community feed
// (https://openphish.com/feed.txt): one phishing URL per line, the whole
// current list each time. Each URL becomes a url indicator exactly as
// listed (OpenPhish flags exact URLs, never whole sites: no domain is
// derived), score 80, tag phishing.
package openphish

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

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
	Client *http.Client     // never nil in the server; tests use vendortest.MirrorClient
	Now    func() time.Time // nil: time.Now
	// Test knobs; zero takes the default.
	MaxBytes     int64
	MaxRetries   int
	MaxRetryWait time.Duration
}

// cursor is what the next run asks with: the validators of the list read.
type cursor struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// Fetch reads the whole current list, unless it is unchanged since cursor
// (ETag / Last-Modified): then it returns ioc.ErrUnchanged and reads
// nothing. since is unused: the feed is a snapshot.
func (s *Source) Fetch(ctx context.Context, cur string, _ time.Time, sink ioc.Sink) (string, error) {
	var c cursor
	if cur != "" {
		// A cursor we cannot read only costs a full download.
		_ = json.Unmarshal([]byte(cur), &c)
	}
	resp, err := s.get(ctx, c)
	if err != nil {
		return cur, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified {
		return cur, ioc.ErrUnchanged
	}
	next := cursor{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	maxBytes := s.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	limited := &io.LimitedReader{R: resp.Body, N: maxBytes + 1}
	if err := s.read(ctx, ioc.ProgressReader(sink, limited, resp.ContentLength), sink); err != nil {
		return cur, err
	}
	if limited.N <= 0 {
		// What came was handed over, but the list is not complete: the run
		// fails, so nothing of it expires.
		return cur, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("openphish: the list is larger than %d bytes", maxBytes))
	}
	ioc.ListComplete(sink, List)
	b, _ := json.Marshal(next)
	if next == (cursor{}) {
		b = nil
	}
	return string(b), nil
}

// get asks for the list, conditionally, waiting out a bounded number of
// 429 and 5xx answers.
func (s *Source) get(ctx context.Context, c cursor) (*http.Response, error) {
	retries := s.MaxRetries
	if retries <= 0 {
		retries = DefaultMaxRetries
	}
	maxWait := s.MaxRetryWait
	if maxWait <= 0 {
		maxWait = DefaultMaxRetryWait
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, FeedURL, nil)
		if err != nil {
			return nil, fmt.Errorf("openphish: %w", err)
		}
		if c.ETag != "" {
			req.Header.Set("If-None-Match", c.ETag)
		}
		if c.LastModified != "" {
			req.Header.Set("If-Modified-Since", c.LastModified)
		}
		resp, err := s.Client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, ioc.HTTPRequestFailure("openphish", err)
		}
		code := resp.StatusCode
		if code == http.StatusNotModified || code >= 200 && code < 300 {
			return resp, nil
		}
		retryable := code == http.StatusTooManyRequests || code >= 500
		wait, ok := retryAfter(resp, maxWait)
		if !retryable || attempt >= retries || !ok {
			defer resp.Body.Close()
			return nil, ioc.HTTPStatusFailure("openphish", resp)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
	}
}

// retryAfter is how long resp asks to wait: Retry-After in seconds, or a
// second when it names none; ok is false when it asks longer than max.
func retryAfter(resp *http.Response, limit time.Duration) (time.Duration, bool) {
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return min(time.Second, limit), true
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		d := time.Duration(n) * time.Second
		return d, d <= limit
	}
	if t, err := http.ParseTime(v); err == nil {
		d := max(time.Until(t), 0)
		return d, d <= limit
	}
	return min(time.Second, limit), true
}

// read hands every URL of body to sink.
func (s *Source) read(ctx context.Context, body io.Reader, sink ioc.Sink) error {
	br := bufio.NewReaderSize(body, 64<<10)
	for line := int64(1); ; line++ {
		raw, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("openphish: the list was cut short after %d lines: %w", line-1, err))
			}
			if errors.Is(err, errLongLine) {
				sink.Rejected(line, fmt.Sprintf("a line longer than %d bytes", maxLine))
				continue
			}
			return ioc.HTTPRequestFailure("openphish", err)
		}
		if v := strings.TrimSpace(raw); v != "" && !strings.HasPrefix(v, "#") {
			value, nerr := ioc.Normalize(ioc.URL, v)
			if nerr != nil {
				sink.Rejected(line, nerr.Error())
			} else if err := sink.Indicator(ctx, ioc.Indicator{Kind: ioc.URL, Value: value, Source: List,
				Score: Score, Tags: []string{Tag}}); err != nil {
				return err
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
