package phishtank

import (
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

// Defaults of the retry knobs of Source.
const (
	DefaultMaxRetries   = 3
	DefaultMaxRetryWait = 5 * time.Minute
	// DefaultRetryBackoff is the wait before repeating a 429 or 5xx that
	// gave no usable Retry-After.
	DefaultRetryBackoff = 30 * time.Second
)

// retrier sends GETs and repeats one that answers 429 or 5xx after its
// Retry-After, a bounded number of times.
type retrier struct {
	who        string
	client     *http.Client
	header     http.Header
	maxRetries int
	maxWait    time.Duration
	backoff    time.Duration
	now        func() time.Time
	// mask hides secrets (a key in the URL path) in what errors quote.
	mask func(string) string
}

// validators are the ETag and Last-Modified of a list as last read.
type validators struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

func (v validators) set(h http.Header) {
	if v.ETag != "" {
		h.Set("If-None-Match", v.ETag)
	}
	if v.LastModified != "" {
		h.Set("If-Modified-Since", v.LastModified)
	}
}

func validatorsOf(resp *http.Response) validators {
	return validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
}

func parseValidators(cursor string) validators {
	var v validators
	if json.Unmarshal([]byte(cursor), &v) != nil {
		return validators{}
	}
	return v
}

func (v validators) String() string {
	if v == (validators{}) {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// get returns the 2xx or 304 answer to GET u; the caller closes its body.
func (r *retrier) get(ctx context.Context, u string, cond validators) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, ioc.Fail(ioc.InvalidURL, fmt.Errorf("%s: unable to build the request for %s: %w", r.who, r.mask(u), r.maskErr(err)))
		}
		for k, vs := range r.header {
			req.Header[k] = vs
		}
		cond.set(req.Header)
		resp, err := r.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s: unable to get %s: %w", r.who, r.mask(u), ctx.Err())
			}
			return nil, r.requestFailure(err)
		}
		code := resp.StatusCode
		if code >= 200 && code < 300 || code == http.StatusNotModified {
			return resp, nil
		}
		retryable := code == http.StatusTooManyRequests || code >= 500 && code <= 599 && code != 509
		if !retryable || attempt >= r.maxRetries {
			defer resp.Body.Close()
			return nil, r.statusFailure(u, resp, attempt+1)
		}
		wait, ok := retryAfter(resp.Header.Get("Retry-After"), r.now())
		if !ok {
			wait = r.backoff
		}
		if wait > r.maxWait {
			defer resp.Body.Close()
			return nil, r.statusFailure(u, resp, attempt+1)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%s: unable to wait to repeat %s: %w", r.who, r.mask(u), ctx.Err())
		case <-t.C:
		}
	}
}

// statusFailure classifies a non-2xx answer: 402 (abuse.ch) and 509
// (PhishTank) are quota answers like 429.
func (r *retrier) statusFailure(u string, resp *http.Response, tries int) error {
	err := ioc.HTTPStatusFailure(r.who, resp)
	kind := ioc.FailureOf(err)
	if c := resp.StatusCode; c == http.StatusPaymentRequired || c == 509 {
		kind = ioc.SurpassedQueryLimit
	}
	var fe *ioc.FetchError
	if errors.As(err, &fe) {
		err = fe.Err
	}
	detail := fmt.Sprintf("GET %s", r.mask(u))
	if tries > 1 {
		detail += fmt.Sprintf(", %d times", tries)
	}
	return ioc.Fail(kind, fmt.Errorf("%w (%s)", err, detail))
}

// requestFailure classifies an error of the transport or of reading a body.
func (r *retrier) requestFailure(err error) error {
	err = ioc.HTTPRequestFailure(r.who, err)
	var fe *ioc.FetchError
	if errors.As(err, &fe) {
		return ioc.Fail(fe.Kind, r.maskErr(fe.Err))
	}
	return r.maskErr(err)
}

func (r *retrier) maskErr(err error) error {
	if s := err.Error(); r.mask(s) != s {
		return &maskedError{msg: r.mask(s), err: err}
	}
	return err
}

// maskedError shows a message with a secret masked and keeps the chain
// for errors.Is and errors.As.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(h); err == nil {
		return time.Duration(max(s, 0)) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// errTooBig marks a body over its cap.
var errTooBig = errors.New("body over its cap")

// bodyReader reads a download within its cap and remembers a failure of
// the connection, so that the parser's error can be told from the
// network's.
type bodyReader struct {
	r    io.Reader
	left int64
	err  error // of the underlying reader, io.EOF excepted
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the cap: one more byte means over it.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			b.err = errTooBig
			return 0, b.err
		}
		if err != nil && err != io.EOF {
			b.err = err
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}
