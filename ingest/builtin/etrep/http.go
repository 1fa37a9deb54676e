package etrep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
)

// Retry defaults, for the zero values of Source's knobs. A vendor may answer 429
// or a passing 5xx: a single one is
// waited out, a persistent one fails the run and the cursor stays.
const (
	DefaultMaxRetries   = 3
	DefaultMaxRetryWait = 2 * time.Minute
	defaultRetryWait    = 5 * time.Second // 429/5xx without a usable Retry-After, times the attempt
)

func (s *Source) client() *http.Client {
	if s.Client != nil {
		return s.Client
	}
	return http.DefaultClient
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Source) maxRetries() int {
	switch {
	case s.MaxRetries < 0:
		return 0
	case s.MaxRetries == 0:
		return DefaultMaxRetries
	}
	return s.MaxRetries
}

func (s *Source) maxRetryWait() time.Duration {
	if s.MaxRetryWait > 0 {
		return s.MaxRetryWait
	}
	return DefaultMaxRetryWait
}

func (s *Source) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// get sends GET u with hdr and returns a 2xx or 304 answer. A 429 or 5xx is
// retried after its Retry-After (or a short backoff) up to MaxRetries
// times; a longer wait than MaxRetryWait is not waited. shown is u as a
// message may quote it. The caller closes the body.
func (s *Source) get(ctx context.Context, u, shown string, hdr http.Header) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, ioc.Fail(ioc.InvalidURL, fmt.Errorf("etrep: unable to build a request for %s: %w", shown, err))
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := s.client().Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("etrep: unable to get %s: %w", shown, ctx.Err())
			}
			var ue *url.Error
			if errors.As(err, &ue) {
				ue.URL = shown
			}
			return nil, ioc.HTTPRequestFailure("etrep", err)
		}
		if retryable(resp.StatusCode) && attempt < s.maxRetries() {
			wait, ok := retryAfter(resp.Header.Get("Retry-After"), s.now())
			if !ok {
				wait = defaultRetryWait * time.Duration(attempt+1)
			}
			if wait <= s.maxRetryWait() {
				drain(resp)
				if err := s.sleep(ctx, wait); err != nil {
					return nil, fmt.Errorf("etrep: unable to wait to retry %s: %w", shown, err)
				}
				continue
			}
		}
		if resp.StatusCode == http.StatusNotModified {
			return resp, nil
		}
		if err := ioc.HTTPStatusFailure("etrep", resp); err != nil {
			resp.Body.Close()
			return nil, err
		}
		return resp, nil
	}
}

func retryable(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500 && code <= 599
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(h); err == nil {
		return time.Duration(max(n, 0)) * time.Second, n >= 0
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// bodyReader reads at most max bytes of an answer, remembering that it cut
// the body and the transport's first error: the JSON decoder would report
// a cut connection as a syntax error.
type bodyReader struct {
	r         io.Reader
	max, read int64
	exceeded  bool
	err       error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.read >= b.max {
		var one [1]byte
		if n, err := b.r.Read(one[:]); n == 0 && err != nil {
			b.note(err)
			return 0, err
		}
		b.exceeded = true
		return 0, io.ErrUnexpectedEOF
	}
	if left := b.max - b.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	b.note(err)
	return n, err
}

func (b *bodyReader) note(err error) {
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
}

// failure classifies err, met while decoding the body of shown.
func (b *bodyReader) failure(ctx context.Context, shown string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("etrep: unable to read %s: %w", shown, ctx.Err())
	case b.err != nil:
		return ioc.HTTPRequestFailure("etrep", fmt.Errorf("reading %s: %w", shown, b.err))
	case b.exceeded:
		return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("etrep: %s is larger than %d bytes", shown, b.max))
	}
	return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("etrep: %s is not in the expected format: %w", shown, err))
}
