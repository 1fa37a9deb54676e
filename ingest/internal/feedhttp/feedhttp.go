// Package feedhttp is the HTTP plumbing the built-in feed sources share, so
// that every vendor is asked, retried, capped and classified the same way.
// It imports only ioc and the standard library, like the sources; it is
// internal to ingest/builtin because its API is shaped for them.
//
// A source embeds Settings (its client and retry knobs) and builds one
// Getter per run (or per list, when lists fail apart) from them, and for
// each download:
//
//	g := &feedhttp.Getter{Settings: s.Settings, Who: "phishtank",
//		Header: http.Header{"User-Agent": {"tifeeds"}}, Secret: key}
//	resp, err := g.Get(ctx, u, prev)          // prev: the Validators kept in the cursor
//	if err != nil {
//		return cursor, err                    // classified, secret masked
//	}
//	defer feedhttp.Close(resp)
//	if resp.StatusCode == http.StatusNotModified {
//		return cursor, ioc.ErrUnchanged       // only when prev was not zero
//	}
//	body := feedhttp.NewBody(sink, resp, feedhttp.Or(s.MaxBytes, DefaultMaxBytes))
//	if err := parse(ctx, body, sink); err != nil {
//		return cursor, g.BodyFailure(ctx, g.Shown(u), body, err)
//	}
//	next := feedhttp.ValidatorsOf(resp)       // into the cursor
//
// What Getter.Get does:
//   - sends GET with Header, and If-None-Match / If-Modified-Since from the
//     Validators given; returns a 2xx answer, or a 304 when it asked
//     conditionally;
//   - repeats a 429 or a 5xx (509, PhishTank's daily quota, excepted) after
//     its Retry-After (delay-seconds or an HTTP date; without a usable one,
//     n×Backoff before repeat n), at most MaxRetries times, and fails at
//     once when the wait asked for is over MaxRetryWait;
//   - classifies a final non-2xx through ioc.HTTPStatusFailure, with 402
//     (abuse.ch) and 509 (PhishTank) as ioc.SurpassedQueryLimit, quoting
//     "GET <url>, N times" and, after a 401/403, Credentials;
//   - classifies a transport error through ioc.HTTPRequestFailure.
//
// Every URL or error a message quotes is masked: query values by
// ioc.MaskURL and Secret (a key in the URL path), raw or path-escaped, as
// ***.
//
// Body caps a download, reports its progress to the sink
// (source.ProgressReader) and remembers why it stopped, so that BodyFailure
// tells the run ending, the connection, the cap and bad data apart (a JSON
// decoder reports a cut connection as a syntax error). A parser returns an
// error of the sink wrapped in SinkError, and may return data errors it
// classified itself (an *ioc.FetchError); BodyFailure passes both on.
package feedhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tifeeds/tifeeds/ingest/source"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
)

// Defaults for the zero values of Getter's knobs. A source with other
// defaults sets the knobs itself.
const (
	DefaultMaxRetries   = 3
	DefaultMaxRetryWait = 2 * time.Minute
	// DefaultBackoff is the first wait before repeating a 429 or 5xx that
	// gave no usable Retry-After; the n-th repeat waits n times it.
	DefaultBackoff = 5 * time.Second
)

// drainBytes is how much of an unread body Close reads so that the
// connection can be reused; more is not worth the wait.
const drainBytes = 64 << 10

// defaultClient is used when a Getter has no Client (tests only: the server
// always sets one): a stalled vendor must not hold a run for ever.
var defaultClient = &http.Client{Timeout: 10 * time.Minute}

// Getter sends a source's GETs. The zero value of every knob is a safe
// default; a Getter is not changed while in use and may be shared by the
// lists of one run.
type Getter struct {
	Settings
	// Who names the source (or list) in messages and failures: "otx",
	// "sslbl".
	Who string
	// Header goes with every request (User-Agent, an auth header).
	Header http.Header
	// Secret is masked as *** (raw and path-escaped) wherever a message
	// quotes it: a key in the URL path. "" masks nothing more than
	// ioc.MaskURL.
	Secret string
	// Credentials is added to a 401 or 403 failure: which setting to
	// check ("set --abusech-auth-key (TIFEEDS_ABUSECH_AUTH_KEY)").
	Credentials string
}

// Settings are the client and retry settings of a source: every source
// embeds them once, and its Getters take them whole.
type Settings struct {
	// Client sends the requests: the server's egress policy and feed
	// mirror. nil: a client with a 10-minute timeout.
	Client *http.Client
	// Now is the clock for Retry-After dates; nil: time.Now.
	Now func() time.Time
	// MaxRetries is how many times a 429 or 5xx is repeated; 0:
	// DefaultMaxRetries, negative: never.
	MaxRetries int
	// MaxRetryWait is the longest wait a retry may take; a 429 or 5xx
	// asking for more fails at once. 0: DefaultMaxRetryWait.
	MaxRetryWait time.Duration
	// RetryBackoff is the first wait when an answer gives no usable
	// Retry-After; repeat n waits n×RetryBackoff. 0: DefaultBackoff.
	RetryBackoff time.Duration
	// Sleep waits d or until ctx ends; nil: a timer. Tests replace it to
	// record the waits instead of taking them.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Or returns s with each zero retry setting taken from d: a source's own
// defaults, which differ from the Getter's.
func (s Settings) Or(d Settings) Settings {
	if s.MaxRetries == 0 { // negative: never, kept
		s.MaxRetries = d.MaxRetries
	}
	if s.MaxRetryWait == 0 {
		s.MaxRetryWait = d.MaxRetryWait
	}
	if s.RetryBackoff == 0 {
		s.RetryBackoff = d.RetryBackoff
	}
	return s
}

// Get sends GET u and returns a 2xx answer, or a 304 when cond is not
// zero (the request was conditional). Every other answer, after the
// retries described in the package comment, is an error classified for
// the run (an *ioc.FetchError), and so is a transport error; the run's end
// is returned as an error wrapping ctx.Err(). The caller closes the body,
// with Close.
func (g *Getter) Get(ctx context.Context, u string, cond Validators) (*http.Response, error) {
	return g.do(ctx, http.MethodGet, u, cond)
}

// Head sends HEAD u, retried and classified as Get does: for a vendor
// that tells a list's version by its headers only (Recorded Future's
// ETag), so that an unchanged list is not downloaded.
func (g *Getter) Head(ctx context.Context, u string) (*http.Response, error) {
	return g.do(ctx, http.MethodHead, u, Validators{})
}

func (g *Getter) do(ctx context.Context, method, u string, cond Validators) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return nil, ioc.Fail(ioc.InvalidURL, fmt.Errorf("%s: unable to build the request for %s: %w", g.Who, g.Shown(u), g.maskErr(err)))
		}
		for k, vs := range g.Header {
			req.Header[k] = vs
		}
		cond.set(req.Header)
		resp, err := g.client().Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s: unable to get %s: %w", g.Who, g.Shown(u), ctx.Err())
			}
			return nil, g.requestFailure(err)
		}
		code := resp.StatusCode
		if code >= 200 && code < 300 || code == http.StatusNotModified && !cond.IsZero() {
			return resp, nil
		}
		wait, retry := g.retryWait(resp, attempt)
		if !retry {
			defer resp.Body.Close()
			return nil, g.statusFailure(method, u, resp, attempt)
		}
		Close(resp)
		if err := g.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("%s: unable to wait to repeat %s: %w", g.Who, g.Shown(u), err)
		}
	}
}

// retryWait says whether the answer to attempt (1-based) is repeated, and
// after how long.
func (g *Getter) retryWait(resp *http.Response, attempt int) (time.Duration, bool) {
	code := resp.StatusCode
	// 509 is PhishTank's daily bandwidth quota: repeating it within
	// minutes only spends the next day's.
	retryable := code == http.StatusTooManyRequests || code >= 500 && code <= 599 && code != 509
	if !retryable || attempt > g.maxRetries() {
		return 0, false
	}
	wait, ok := RetryAfter(resp.Header.Get("Retry-After"), g.now())
	if !ok {
		wait = time.Duration(attempt) * Or(g.RetryBackoff, DefaultBackoff)
	}
	return wait, wait <= Or(g.MaxRetryWait, DefaultMaxRetryWait)
}

// statusFailure classifies a non-2xx answer: 402 (abuse.ch) and 509
// (PhishTank) are quota answers like 429.
func (g *Getter) statusFailure(method, u string, resp *http.Response, tries int) error {
	err := ioc.HTTPStatusFailure(g.Who, resp)
	kind := ioc.FailureOf(err)
	if c := resp.StatusCode; c == http.StatusPaymentRequired || c == 509 {
		kind = ioc.SurpassedQueryLimit
	}
	var fe *ioc.FetchError
	if errors.As(err, &fe) {
		err = fe.Err
	}
	detail := method + " " + g.Shown(u)
	if tries > 1 {
		detail += fmt.Sprintf(", %d times", tries)
	}
	if kind == ioc.InvalidCredentials && g.Credentials != "" {
		detail += "; " + g.Credentials
	}
	return ioc.Fail(kind, fmt.Errorf("%w (%s)", err, detail))
}

// requestFailure classifies an error of the transport or of reading a
// body, masked.
func (g *Getter) requestFailure(err error) error {
	err = ioc.HTTPRequestFailure(g.Who, err)
	var fe *ioc.FetchError
	if errors.As(err, &fe) {
		return ioc.Fail(fe.Kind, g.maskErr(fe.Err))
	}
	return g.maskErr(err)
}

// Shown is u as a message may quote it: query values and Secret masked.
func (g *Getter) Shown(u string) string { return ioc.MaskURL(g.Mask(u)) }

// Mask hides Secret, raw or path-escaped, in text.
func (g *Getter) Mask(text string) string {
	if g.Secret == "" {
		return text
	}
	text = strings.ReplaceAll(text, g.Secret, "***")
	if esc := url.PathEscape(g.Secret); esc != g.Secret {
		text = strings.ReplaceAll(text, esc, "***")
	}
	return text
}

func (g *Getter) maskErr(err error) error {
	if s := err.Error(); g.Mask(s) != s {
		return &maskedError{msg: g.Mask(s), err: err}
	}
	return err
}

// maskedError shows a message with the secret masked and keeps the chain
// for errors.Is and errors.As.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

func (g *Getter) client() *http.Client {
	if g.Client != nil {
		return g.Client
	}
	return defaultClient
}

func (g *Getter) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *Getter) maxRetries() int {
	switch {
	case g.MaxRetries < 0:
		return 0
	case g.MaxRetries == 0:
		return DefaultMaxRetries
	}
	return g.MaxRetries
}

func (g *Getter) sleep(ctx context.Context, d time.Duration) error {
	if g.Sleep != nil {
		return g.Sleep(ctx, d)
	}
	return Wait(ctx, d)
}

// Wait waits d, or until ctx ends: the wait of a source that honours a
// Retry-After or a rate limit, which a disabled feed or a stop must cut.
func Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RetryAfter reads a Retry-After header: delay-seconds or an HTTP date (a
// date past is no wait). A negative or unreadable value is no usable
// Retry-After.
func RetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(h); err == nil {
		return time.Duration(n) * time.Second, n >= 0
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Close reads what is left of a body, up to a bound, and closes it, so
// that the connection may carry the next request.
func Close(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainBytes))
	_ = resp.Body.Close()
}

// Or returns v when it is positive, else def: the zero (or nonsense)
// value of a knob means its default.
func Or[T ~int | ~int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Validators are the ETag and Last-Modified of a download as last read,
// kept in a source's cursor (as JSON, under these names) so that the next
// run asks conditionally and an unchanged list is not downloaded again.
type Validators struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// ValidatorsOf returns the validators of an answer.
func ValidatorsOf(resp *http.Response) Validators {
	return Validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
}

// ParseValidators reads a cursor that String wrote; anything else (an
// older format, "") is the zero Validators: download once more.
func ParseValidators(cursor string) Validators {
	var v Validators
	if json.Unmarshal([]byte(cursor), &v) != nil {
		return Validators{}
	}
	return v
}

// String is v as a cursor: JSON, or "" for the zero Validators.
func (v Validators) String() string {
	if v.IsZero() {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// IsZero reports validators that ask nothing (the first download, or a
// server that gave neither header).
func (v Validators) IsZero() bool { return v == Validators{} }

func (v Validators) set(h http.Header) {
	if v.ETag != "" {
		h.Set("If-None-Match", v.ETag)
	}
	if v.LastModified != "" {
		h.Set("If-Modified-Since", v.LastModified)
	}
}

// VendorSettings are the settings of a source of a vendor's fixed API:
// the runner's vendor client (the egress policy and feed mirror) and its
// clock, the retries at their defaults.
func VendorSettings(e source.Env) Settings { return Settings{Client: e.VendorClient, Now: e.Now} }

// VendorKind declares the kind key read from a vendor's fixed API: each
// run, newSource builds its source on the VendorSettings of the runner's
// Env.
func VendorKind(key string, newSource func(Settings) source.Source) source.Kind {
	return source.Kind{Key: key, New: func(e source.Env) source.Source { return newSource(VendorSettings(e)) }}
}
