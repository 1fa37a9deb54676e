// Package falcon reads CrowdStrike Falcon Intelligence indicators
// (premiumKind ENDPOINT_PROTECTION): an OAuth2 client-credentials token
// from POST /oauth2/token, then GET /intel/combined/indicators/v1 sorted by
// _marker, the full _marker of the last row being the cursor. Like every
// premium vendor source it imports only ioc, the standard library and the
// shared feed toolkit, and never touches the store.
//
// The spec's bound of 50,000 indicators per poll is the runner's (the
// kind's per-poll limit): the sink refuses the rest, and since every row
// is checkpointed with its own _marker, the next poll goes on from the
// last row stored.
package falcon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/internal/jsonstream"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// The vendor's fixed endpoints; --feed-mirror rewrites their host.
const (
	Host          = "api.crowdstrike.com"
	TokenURL      = "https://" + Host + "/oauth2/token"
	IndicatorsURL = "https://" + Host + "/intel/combined/indicators/v1"
	// SourceName is the Indicator.Source of every indicator.
	SourceName = "falcon"
)

// Defaults for the zero values of Source's knobs.
const (
	// DefaultPageSize is the limit asked per page (OpenCTI's; the API
	// allows more, but a page is decoded row by row anyway).
	DefaultPageSize = 1000
	// DefaultBackfill bounds the first run when the runner gives no bound:
	// the full history is tens of millions of rows (REFERENCE Pf).
	DefaultBackfill = 7 * 24 * time.Hour
	// DefaultMaxPages bounds one run on its own, whatever the runner's
	// limit: withdrawals do not count against that, and a run must end.
	DefaultMaxPages = 200
	// DefaultMaxPageBytes bounds one page's body (1000 rows of a few KiB).
	DefaultMaxPageBytes = 64 << 20
	// tokenMargin is how long before its announced expiry a token is
	// replaced, so that a request never goes out with one about to expire.
	tokenMargin = time.Minute
	// maxTokenBytes bounds the token endpoint's answer.
	maxTokenBytes = 64 << 10
)

// Source reads Falcon Intelligence indicators. Every request goes through
// Client (the server's egress policy and feed mirror); the URLs are the
// vendor's own. A Source is built per run, so a token never outlives a
// change of the client secret.
type Source struct {
	// Client: never nil in the server; tests use vendortest.MirrorClient.
	// MaxRetryWait is also the longest wait for a spent rate budget.
	feedhttp.Settings

	// PageSize, MaxPages and MaxPageBytes bound a page and one run (0:
	// the defaults).
	PageSize     int
	MaxPages     int
	MaxPageBytes int64
}

// Fetch walks the indicators with the feed's client ID and secret (req.Feed).
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads the indicators whose _marker is after cursor (on the first
// run, those from since, or DefaultBackfill ago) and hands them to sink;
// a deleted one withdraws the feed's sighting. Each row is checkpointed
// with its _marker, kept whole.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	cursor, since, id, secret := req.Cursor, req.Since, req.Feed.Username, req.Feed.Password
	if id == "" || secret == "" {
		return cursor, ioc.Fail(ioc.InvalidCredentials, errors.New("falcon: no client ID or client secret is set: set both on the feed"))
	}
	w := &walk{src: s, id: id, secret: secret, sink: sink, marker: cursor, inclusive: cursor != ""}
	if cursor == "" {
		if since.IsZero() {
			since = s.now().Add(-DefaultBackfill)
		}
		// The first ten digits of a _marker are a Unix time.
		w.marker = strconv.FormatInt(since.Unix(), 10)
	}
	w.g = feedhttp.Getter{Settings: s.Settings, Who: "falcon", Secret: secret, Credentials: "check the feed's client ID and client secret"}
	out := cursor
	for pages := 0; pages < feedhttp.Or(s.MaxPages, DefaultMaxPages); pages++ {
		more, err := w.page(ctx)
		if w.last != "" {
			out = w.last
		}
		if err != nil || !more {
			return out, err
		}
		if err := w.throttle(ctx); err != nil {
			return out, err
		}
	}
	// Bounded: the next run goes on from the last row.
	return out, nil
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// walk is one run's reading of pages.
type walk struct {
	src        *Source
	id, secret string // the API client ID and secret, for the token
	g          feedhttp.Getter
	sink       source.Sink

	// marker is what the next page starts from (_marker:>=); inclusive
	// says that a row with exactly that marker was read already.
	marker    string
	inclusive bool
	last      string // the marker of the last row checkpointed
	position  int64

	token   string
	expires time.Time
	// remaining and retryAt are the rate budget the last answer showed.
	remaining string
	retryAt   string
}

// page reads one page and reports whether another may follow.
func (w *walk) page(ctx context.Context) (bool, error) {
	size := feedhttp.Or(w.src.PageSize, DefaultPageSize)
	u := IndicatorsURL + "?" + url.Values{"limit": {strconv.Itoa(size)}, "sort": {"_marker.asc"},
		"filter": {"_marker:>='" + w.marker + "'"}}.Encode()
	resp, err := w.get(ctx, u)
	if err != nil {
		return false, err
	}
	defer feedhttp.Close(resp)
	w.remaining = resp.Header.Get("X-Ratelimit-Remaining")
	w.retryAt = resp.Header.Get("X-Ratelimit-Retryafter")
	shown := w.g.Shown(u)
	b := feedhttp.NewBody(w.sink, resp, feedhttp.Or(w.src.MaxPageBytes, DefaultMaxPageBytes))
	dec := json.NewDecoder(b)
	var rows, fresh int
	total := -1 // meta.pagination.total: the rows from the marker on
	sawResources := false
	err = jsonstream.Object(dec, func(key string) (bool, error) {
		switch key {
		case "resources":
			sawResources = true
			if t, err := dec.Token(); err != nil {
				return true, err
			} else if t == nil {
				return true, nil // "resources": null, no rows
			} else if t != json.Delim('[') {
				return true, fmt.Errorf("found %v where [ was expected", t)
			}
			for dec.More() {
				var in indicator
				if err := dec.Decode(&in); err != nil {
					return true, err
				}
				rows++
				if in.Marker == "" {
					return true, errors.New("an indicator has no _marker")
				}
				// _marker:>= is inclusive: the row the cursor names was
				// read by the run before.
				if in.Marker < w.marker || in.Marker == w.marker && w.inclusive {
					continue
				}
				fresh++
				w.position++
				if err := w.row(ctx, &in); err != nil {
					return true, &feedhttp.SinkError{Err: err}
				}
			}
			return true, jsonstream.Expect(dec, ']')
		case "meta":
			var m struct {
				Pagination struct {
					Total *int `json:"total"`
				} `json:"pagination"`
			}
			if err := dec.Decode(&m); err != nil {
				return true, err
			}
			if m.Pagination.Total != nil {
				total = *m.Pagination.Total
			}
			return true, nil
		}
		return false, nil
	})
	if err == nil && !sawResources {
		err = errors.New("the answer has no resources")
	}
	if err != nil {
		return false, w.g.BodyFailure(ctx, shown, b, err)
	}
	// The API may give fewer rows than asked: the total says whether more
	// follow (OpenCTI read only the first page of each run that way).
	return fresh > 0 && (rows >= size || total > rows), nil
}

// get sends GET u with a token, fetching one first when there is none or
// it is about to expire, and once more when the answer is a refusal (a
// token revoked or expired early).
func (w *walk) get(ctx context.Context, u string) (*http.Response, error) {
	for refreshed := false; ; refreshed = true {
		if w.token == "" || !w.src.now().Before(w.expires) {
			if err := w.fetchToken(ctx); err != nil {
				return nil, err
			}
			refreshed = true
		}
		g := w.g
		g.Header = http.Header{"Authorization": {"Bearer " + w.token}, "Accept": {"application/json"}}
		resp, err := g.Get(ctx, u, feedhttp.Validators{})
		if err != nil && ioc.FailureOf(err) == ioc.InvalidCredentials && !refreshed {
			w.token = ""
			continue
		}
		return resp, err
	}
}

// fetchToken asks the token endpoint for a token with the client
// credentials, repeating a 429 or 5xx like a GET.
func (w *walk) fetchToken(ctx context.Context) error {
	form := url.Values{"client_id": {w.id}, "client_secret": {w.secret}}.Encode()
	g := &w.g
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, TokenURL, strings.NewReader(form))
		if err != nil {
			return fmt.Errorf("falcon: unable to build the token request: %w", err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		resp, err := w.client().Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("falcon: unable to get a token: %w", ctx.Err())
			}
			// Masked, and classified once: the kind is not said again in
			// the message (the run's detail shows beside it).
			var f *ioc.FetchError
			if !errors.As(ioc.HTTPRequestFailure("falcon", err), &f) {
				return errors.New(g.Mask(err.Error()))
			}
			return ioc.Fail(f.Kind, errors.New(g.Mask(f.Err.Error())))
		}
		code := resp.StatusCode
		if code >= 200 && code < 300 {
			err := w.readToken(resp)
			feedhttp.Close(resp)
			return err
		}
		if code == http.StatusTooManyRequests || code >= 500 {
			wait, ok := feedhttp.RetryAfter(resp.Header.Get("Retry-After"), w.src.now())
			if !ok {
				wait = time.Duration(attempt) * feedhttp.Or(w.src.RetryBackoff, feedhttp.DefaultBackoff)
			}
			maxRetries := feedhttp.Or(w.src.MaxRetries, feedhttp.DefaultMaxRetries)
			if w.src.MaxRetries < 0 {
				maxRetries = 0
			}
			if attempt <= maxRetries && wait <= feedhttp.Or(w.src.MaxRetryWait, feedhttp.DefaultMaxRetryWait) {
				feedhttp.Close(resp)
				if err := w.sleep(ctx, wait); err != nil {
					return fmt.Errorf("falcon: unable to wait to ask for a token again: %w", err)
				}
				continue
			}
		}
		kind := ioc.FailureOf(ioc.HTTPStatusFailure("falcon", resp))
		detail := fmt.Sprintf("falcon: the token endpoint answered %s (POST %s", ioc.StatusLine(resp), TokenURL)
		feedhttp.Close(resp)
		if attempt > 1 {
			detail += fmt.Sprintf(", %d times", attempt)
		}
		detail += ")"
		if code == http.StatusBadRequest || kind == ioc.InvalidCredentials {
			// A refused token: 403 for wrong credentials, 400 for a
			// malformed client ID.
			kind = ioc.InvalidCredentials
			detail += ": the client credentials were refused; " + g.Credentials
		}
		return ioc.Fail(kind, errors.New(g.Mask(detail)))
	}
}

// readToken keeps the token of a token answer (201 Created).
func (w *walk) readToken(resp *http.Response) error {
	var t struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	body := feedhttp.Cap(resp.Body, maxTokenBytes)
	if err := json.NewDecoder(body).Decode(&t); err != nil {
		if f := w.g.ReadFailure(context.Background(), "the token answer", body); f != nil {
			return f
		}
		return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("falcon: the token answer is not in the expected format: %w", err))
	}
	if t.AccessToken == "" {
		return ioc.Fail(ioc.FetchingDataError, errors.New("falcon: the token answer holds no access_token"))
	}
	life := time.Duration(t.ExpiresIn) * time.Second
	if life <= 0 {
		life = 30 * time.Minute // CrowdStrike's usual lifetime
	}
	// Replaced a margin before its expiry, but used at least once.
	w.token, w.expires = t.AccessToken, w.src.now().Add(max(life-tokenMargin, life/2))
	_, _ = io.Copy(io.Discard, body)
	return nil
}

// throttle waits, before the next page, for the rate budget to come back
// when the last answer said it is spent (X-Ratelimit-Remaining: 0), so
// that the next page is not refused; the page is asked again after a 429
// anyway, from the same marker, so none is lost or read twice.
func (w *walk) throttle(ctx context.Context) error {
	if strings.TrimSpace(w.remaining) != "0" {
		return nil
	}
	wait := feedhttp.Or(w.src.RetryBackoff, feedhttp.DefaultBackoff)
	if at, err := strconv.ParseInt(strings.TrimSpace(w.retryAt), 10, 64); err == nil {
		wait = max(time.Unix(at, 0).Sub(w.src.now()), 0)
	}
	if limit := feedhttp.Or(w.src.MaxRetryWait, feedhttp.DefaultMaxRetryWait); wait > limit {
		return ioc.Fail(ioc.SurpassedQueryLimit, fmt.Errorf("falcon: the rate limit is spent for %s, longer than the %s a run waits; the next run goes on", wait.Round(time.Second), limit))
	}
	if err := w.sleep(ctx, wait); err != nil {
		return fmt.Errorf("falcon: unable to wait for the rate limit: %w", err)
	}
	return nil
}

func (w *walk) sleep(ctx context.Context, d time.Duration) error {
	if w.src.Sleep != nil {
		return w.src.Sleep(ctx, d)
	}
	return feedhttp.Wait(ctx, d)
}

func (w *walk) client() *http.Client {
	if w.src.Client != nil {
		return w.src.Client
	}
	return &http.Client{Timeout: 10 * time.Minute}
}

// indicator is the part of a Falcon Intelligence indicator tifeeds reads.
type indicator struct {
	Marker              string   `json:"_marker"`
	Deleted             bool     `json:"deleted"`
	Indicator           string   `json:"indicator"`
	Type                string   `json:"type"`
	MaliciousConfidence string   `json:"malicious_confidence"`
	MalwareFamilies     []string `json:"malware_families"`
	Actors              []string `json:"actors"`
	ThreatTypes         []string `json:"threat_types"`
}

var kinds = map[string]ioc.Kind{
	"ip_address": ioc.IP, "domain": ioc.Domain, "url": ioc.URL,
	"hash_md5": ioc.MD5, "hash_sha1": ioc.SHA1, "hash_sha256": ioc.SHA256,
}

// scores maps malicious_confidence (CATALOG); unverified is below low.
var scores = map[string]int{"high": 80, "medium": 60, "low": 40, "unverified": 20}

// defaultScore is the score of a row without a known confidence.
const defaultScore = 40

// row hands over one row, or counts it as rejected, and checkpoints its
// marker. Only sink errors are returned.
func (w *walk) row(ctx context.Context, in *indicator) error {
	if err := w.hand(ctx, in); err != nil {
		return err
	}
	w.marker, w.inclusive = in.Marker, true
	if err := w.sink.Checkpoint(ctx, in.Marker); err != nil {
		return err
	}
	w.last = in.Marker
	return nil
}

func (w *walk) hand(ctx context.Context, in *indicator) error {
	kind, ok := kinds[strings.ToLower(in.Type)]
	if !ok {
		w.sink.Rejected(w.position, fmt.Sprintf("skipped: %s is not a kind tifeeds keeps", truncate(in.Type)))
		return nil
	}
	value, err := ioc.Normalize(kind, in.Indicator)
	if err != nil {
		w.sink.Rejected(w.position, fmt.Sprintf("invalid %s %q: %v", in.Type, truncate(in.Indicator), err))
		return nil
	}
	score, ok := scores[strings.ToLower(in.MaliciousConfidence)]
	if !ok {
		score = defaultScore
	}
	return w.sink.Indicator(ctx, ioc.Indicator{Kind: kind, Value: value, Source: SourceName, Score: score,
		Tags: tags(in), Revoked: in.Deleted})
}

// tags are the malware families, actors and threat types, lower-cased,
// without repeats or the literal None.
func tags(in *indicator) []string {
	var out []string
	for _, list := range [][]string{in.MalwareFamilies, in.Actors, in.ThreatTypes} {
	next:
		for _, t := range list {
			t = strings.ToLower(strings.TrimSpace(t))
			if t == "" || t == "none" {
				continue
			}
			for _, have := range out {
				if have == t {
					continue next
				}
			}
			out = append(out, t)
		}
	}
	return out
}

// truncate shortens what a rejection quotes.
func truncate(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// Kind declares the EndpointProtection premium kind.
func Kind() source.Kind {
	return premium.VendorKind(premium.EndpointProtection, func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
}
