// Package taxii is a TAXII 2.1 client that reads a collection page by page
// and turns its STIX 2.1 content into indicators for an source.Sink.
//
// It implements the consumer side of TAXII 2.1 (OASIS, taxii-v2.1-os):
// discovery at /taxii2/, API roots, the collections list and the objects
// endpoint with added_after, limit and next, and the STIX 2.1 patterning
// grammar for indicators. Like every source it imports only ioc and the
// standard library and never touches the store.
package taxii

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ioc"
)

// MediaType is the TAXII 2.1 media type sent in Accept.
const MediaType = "application/taxii+json;version=2.1"

// Defaults for the zero values of Client's fields.
const (
	DefaultPageSize     = 1000
	DefaultMaxRetries   = 3
	DefaultMaxRetryWait = 5 * time.Minute
	defaultRetryWait    = 30 * time.Second // 429 without a usable Retry-After
	defaultTimeout      = 5 * time.Minute  // per request, when HTTP is nil
	maxDocumentBytes    = 16 << 20         // discovery, API root, collections
)

// Per-run bounds, the defaults of Client's Max fields. A TAXII server
// decides how long a walk is (more: true may never end), so a run stops at
// these, checkpointed, and the next run goes on from its cursor. A page
// of 1,000 objects is about 1 MB; 64 MiB leaves room for verbose objects
// (reports, long descriptions) while bounding what one page can cost.
const (
	DefaultMaxPages      = 5000
	DefaultMaxObjects    = 500_000
	DefaultMaxRunTime    = 30 * time.Minute
	DefaultMaxPageBytes  = 64 << 20
	DefaultMaxValueBytes = 4 << 20
)

// Client reads TAXII 2.1 collections. Its zero value is usable; build one per
// feed, since it carries the feed's credentials. Fields are read-only once the
// client is in use.
type Client struct {
	// HTTP sends the requests; nil means a client with a 5-minute timeout.
	HTTP *http.Client
	// Username and Password are sent as HTTP basic credentials when either
	// is set.
	Username, Password string
	// PageSize is the limit asked of the server per page (it may send
	// fewer); 0 means DefaultPageSize.
	PageSize int
	// MaxRetries is how many times a 429 is retried after its Retry-After
	// before the fetch fails with Surpassed Query Limit; 0 means
	// DefaultMaxRetries, negative means no retry.
	MaxRetries int
	// MaxRetryWait is the longest Retry-After honoured: a server asking for
	// a longer pause fails the fetch at once with Surpassed Query Limit (the
	// next scheduled run tries again); 0 means DefaultMaxRetryWait.
	MaxRetryWait time.Duration
	// Sleep waits d or until ctx is done; nil means a timer. Tests replace
	// it so that they do not wait.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock used to drop expired indicators; nil means time.Now.
	Now func() time.Time
	// Normalize turns raw values into stored ones; nil means ioc.Normalize.
	Normalize NormalizeFunc
	// UserAgent, when set, is sent with every request.
	UserAgent string

	// MaxPages, MaxObjects and MaxRunTime bound one Fetch: it stops after
	// the page that reaches one of them, returning ErrRunCapped with the
	// cursor of that page; 0 means the Default of each. MaxRunTime is
	// measured with Now.
	MaxPages   int
	MaxObjects int64
	MaxRunTime time.Duration
	// MaxPageBytes bounds one answer's body, on the wire and once
	// decompressed; MaxValueBytes bounds one JSON value in it (one object
	// of the envelope, or one string). 0 means the Default of each.
	MaxPageBytes  int64
	MaxValueBytes int64
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: defaultTimeout}
}

func (c *Client) pageSize() int {
	if c.PageSize > 0 {
		return c.PageSize
	}
	return DefaultPageSize
}

func (c *Client) maxRetries() int {
	switch {
	case c.MaxRetries < 0:
		return 0
	case c.MaxRetries == 0:
		return DefaultMaxRetries
	}
	return c.MaxRetries
}

func (c *Client) maxRetryWait() time.Duration {
	if c.MaxRetryWait > 0 {
		return c.MaxRetryWait
	}
	return DefaultMaxRetryWait
}

func (c *Client) maxPageBytes() int64  { return orDefault(c.MaxPageBytes, DefaultMaxPageBytes) }
func (c *Client) maxValueBytes() int64 { return orDefault(c.MaxValueBytes, DefaultMaxValueBytes) }

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Client) normalize() NormalizeFunc {
	if c.Normalize != nil {
		return c.Normalize
	}
	return ioc.Normalize
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	return feedhttp.Wait(ctx, d)
}

// get sends GET u with the TAXII headers and returns a 2xx response whose
// body is TAXII JSON. A 429 is retried after its Retry-After up to
// MaxRetries times. notFound is the failure kind a 404 means at this URL.
// The caller closes the body.
func (c *Client) get(ctx context.Context, u string, notFound ioc.FailureKind) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, ioc.Fail(ioc.InvalidURL, fmt.Errorf("taxii: unable to build a request for %s: %w", u, err))
		}
		req.Header.Set("Accept", MediaType)
		// Asked for explicitly, gzip is left to us to decompress, within
		// the page bound (see openBody).
		req.Header.Set("Accept-Encoding", "gzip")
		if c.Username != "" || c.Password != "" {
			req.SetBasicAuth(c.Username, c.Password)
		}
		if c.UserAgent != "" {
			req.Header.Set("User-Agent", c.UserAgent)
		}
		resp, err := c.httpClient().Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("taxii: unable to get %s: %w", withoutQuery(u), ctx.Err())
			}
			if ue := (*url.Error)(nil); errors.As(err, &ue) {
				ue.URL = withoutQuery(ue.URL)
			}
			return nil, ioc.HTTPRequestFailure("taxii", err)
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			wait, ok := retryAfter(resp.Header.Get("Retry-After"), c.now())
			drain(resp)
			if !ok {
				wait = defaultRetryWait
			}
			if attempt >= c.maxRetries() {
				return nil, ioc.Fail(ioc.SurpassedQueryLimit, fmt.Errorf("taxii: %s answered 429 Too Many Requests %d times", u, attempt+1))
			}
			if wait > c.maxRetryWait() {
				return nil, ioc.Fail(ioc.SurpassedQueryLimit, fmt.Errorf("taxii: %s asks to retry after %s, longer than %s", u, wait, c.maxRetryWait()))
			}
			if err := c.sleep(ctx, wait); err != nil {
				return nil, fmt.Errorf("taxii: unable to wait for %s: %w", u, err)
			}
			continue
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			defer drain(resp)
			return nil, statusError(u, resp, notFound)
		}
		if !isTAXIIJSON(resp.Header.Get("Content-Type")) {
			drain(resp)
			kind := ioc.FetchingDataError
			if notFound == ioc.InvalidURL {
				kind = ioc.InvalidURL
			}
			return nil, ioc.Fail(kind, fmt.Errorf("taxii: %s answered %q, not TAXII JSON", withoutQuery(u), resp.Header.Get("Content-Type")))
		}
		return resp, nil
	}
}

// answerError is a non-2xx answer, classified. Its status lets Fetch tell
// a refused next from other failures.
type answerError struct {
	status int
	err    error
}

func (e *answerError) Error() string { return e.err.Error() }
func (e *answerError) Unwrap() error { return e.err }

// statusError maps a non-2xx answer to the spec's failure kinds, quoting
// the status line only: the body is the server's, and an error detail is
// shown to users.
func statusError(u string, resp *http.Response, notFound ioc.FailureKind) error {
	err := ioc.HTTPStatusFailure("taxii", resp)
	kind := ioc.FailureOf(err)
	switch resp.StatusCode {
	case http.StatusNotFound, http.StatusGone:
		kind = notFound
	case http.StatusNotAcceptable, http.StatusUnsupportedMediaType:
		// The server does not speak TAXII 2.1 at this address.
		kind = ioc.InvalidURL
	}
	var fe *ioc.FetchError
	if errors.As(err, &fe) {
		err = fe.Err
	}
	return &answerError{status: resp.StatusCode, err: ioc.Fail(kind, fmt.Errorf("%w (GET %s)", err, withoutQuery(u)))}
}

// withoutQuery drops the query of u for messages: a next token names a
// server-side session.
func withoutQuery(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

// isTAXIIJSON accepts the TAXII 2.1 media type and, since some servers send
// them, plain application/json and the STIX media type. An HTML login page
// or a TAXII 2.0 answer is refused.
func isTAXIIJSON(contentType string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch mt {
	case "application/json", "application/stix+json":
		return true
	case "application/taxii+json":
		v, ok := params["version"]
		return !ok || v == "2.1"
	}
	return false
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(h); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// getJSON gets u and decodes its JSON body into v. Bad JSON is badKind.
func (c *Client) getJSON(ctx context.Context, u string, notFound, badKind ioc.FailureKind, v any) error {
	resp, err := c.get(ctx, u, notFound)
	if err != nil {
		return err
	}
	defer drain(resp)
	b, err := openBody(resp, min(maxDocumentBytes, c.maxPageBytes()))
	if err != nil {
		return err
	}
	if err := json.NewDecoder(b.out).Decode(v); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("taxii: unable to read %s: %w", u, ctx.Err())
		}
		if b.raw.err != nil || b.raw.exceeded || b.out.exceeded {
			return b.failure(err, err)
		}
		return ioc.Fail(badKind, fmt.Errorf("taxii: unable to decode %s: %w", u, err))
	}
	return nil
}

// CollectionURL is a parsed TAXII 2.1 collection URL,
// <api_root>/collections/<collection_id>/.
type CollectionURL struct {
	APIRoot string // absolute, ending in "/"
	ID      string // the collection id, unescaped
}

// String returns the canonical form of the collection URL, with the
// trailing slash.
func (u CollectionURL) String() string {
	return u.APIRoot + "collections/" + url.PathEscape(u.ID) + "/"
}

func (u CollectionURL) objectsURL() string { return u.String() + "objects/" }

func (u CollectionURL) collectionsURL() string { return u.APIRoot + "collections/" }

// discoveryURL is the server's discovery endpoint: /taxii2/ at the root of
// the host that serves the API root.
func (u CollectionURL) discoveryURL() string {
	p, _ := url.Parse(u.APIRoot)
	return p.Scheme + "://" + p.Host + "/taxii2/"
}

// ErrCollectionURLForm is the reason a collection URL is not of the form
// <api_root>/collections/<collection_id>/.
var ErrCollectionURLForm = errors.New("collection URL must have the form <api_root>/collections/<collection_id>/")

// ParseCollectionURL checks the form of a collection URL. A URL that is not
// an absolute http(s) URL is Invalid URL; one whose path is not
// <api_root>/collections/<collection_id>/ (trailing slash optional), or that
// has a query or fragment, is Invalid collection URL. Both are ioc.FetchError.
func ParseCollectionURL(s string) (CollectionURL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return CollectionURL{}, ioc.Fail(ioc.InvalidURL, fmt.Errorf("taxii: unable to parse collection URL: %w", err))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return CollectionURL{}, ioc.Fail(ioc.InvalidURL, fmt.Errorf("taxii: collection URL %q is not an absolute http or https URL", s))
	}
	if u.User != nil {
		return CollectionURL{}, ioc.Fail(ioc.InvalidURL, fmt.Errorf("taxii: collection URL %q carries credentials; use the username and password fields", s))
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return CollectionURL{}, ioc.Fail(ioc.InvalidCollectionURL, fmt.Errorf("taxii: %q has a query or fragment: %w", s, ErrCollectionURLForm))
	}
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	i := strings.LastIndex(p, "/collections/")
	if i < 0 {
		return CollectionURL{}, ioc.Fail(ioc.InvalidCollectionURL, fmt.Errorf("taxii: %q: %w", s, ErrCollectionURLForm))
	}
	rawID := p[i+len("/collections/"):]
	id, err := url.PathUnescape(rawID)
	if err != nil || id == "" || strings.Contains(rawID, "/") {
		return CollectionURL{}, ioc.Fail(ioc.InvalidCollectionURL, fmt.Errorf("taxii: %q: %w", s, ErrCollectionURLForm))
	}
	root := &url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host)}
	rootURL := root.String() + p[:i] + "/"
	return CollectionURL{APIRoot: rootURL, ID: id}, nil
}

// sameRoot compares two API root URLs: scheme and host without case, a
// default port or not, with or without the trailing slash.
func sameRoot(a, b string) bool {
	return canonicalRoot(a) == canonicalRoot(b)
}

func canonicalRoot(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return strings.ToLower(u.Scheme) + "://" + host + strings.TrimSuffix(u.EscapedPath(), "/") + "/"
}
