// Package otx reads the pulses an AlienVault OTX account subscribes to
// (builtinKind OPEN_THREAT_EXCHANGE): GET /api/v1/pulses/subscribed with
// modified_since, following the absolute next links, one checkpoint per
// page. Like every built-in source it imports only ioc and the standard
// library and never touches the store.
package otx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/internal/jsonstream"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// The vendor's fixed endpoint; --feed-mirror rewrites its host.
const (
	host     = "otx.alienvault.com"
	firstURL = "https://" + host + "/api/v1/pulses/subscribed"
	pageSize = 50 // the SDK's default; a pulse may hold thousands of indicators
)

// Defaults for the zero values of Source's knobs.
const (
	DefaultMaxRetries   = feedhttp.DefaultMaxRetries
	DefaultMaxRetryWait = feedhttp.DefaultMaxRetryWait
	// DefaultBackfill is how far back the first run reads when the runner
	// gives no bound: OTX must never be walked without modified_since
	// (REFERENCE B1), and 7 days is the feeds' default backfill.
	DefaultBackfill = 7 * 24 * time.Hour
	// DefaultMaxPages bounds one run (50 pulses a page); the run stops,
	// checkpointed, and the next one goes on from the same page.
	DefaultMaxPages = 1000
	// DefaultMaxPageBytes bounds one page's body. A page holds 50 pulses,
	// each decoded whole (its tags may follow its indicators), so this also
	// bounds the memory of one pulse.
	DefaultMaxPageBytes = 64 << 20
)

// Source reads OTX subscribed pulses. Every request goes through Client
// (the server's egress policy and feed mirror); the URLs are the vendor's
// own, fixed.
type Source struct {
	feedhttp.Settings // Client: never nil in the server; tests use vendortest.MirrorClient

	// MaxPages and MaxPageBytes bound one run (0: the defaults).
	MaxPages     int
	MaxPageBytes int64
}

// timeLayout is how OTX writes times (UTC, no zone), and how we write the
// cursor and modified_since.
const timeLayout = "2006-01-02T15:04:05.000000"

// walkCursor is the cursor while a walk is under way: the bound it started
// from, the newest modified seen so far and the page to read next. Pages
// come newest first, so the newest modified seen is only a safe cursor once
// the walk has ended.
type walkCursor struct {
	Since string `json:"since"`
	Max   string `json:"max"`
	Next  string `json:"next"`
}

// Fetch walks the subscribed pulses with the feed's key (req.Feed.Key).
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads the pulses modified after cursor (the last modified seen; on
// the first run, after since or DefaultBackfill ago) and hands their
// indicators to sink. The cursor it returns is the newest modified seen,
// so the next run reads strictly newer pulses only.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	cursor, key := req.Cursor, req.Feed.Key // key: --otx-api-key, sent as X-OTX-API-KEY; required
	if key == "" {
		return cursor, ioc.Fail(ioc.InvalidCredentials, errors.New("otx: no API key is set: set --otx-api-key (TIFEEDS_OTX_API_KEY)"))
	}
	w, err := s.start(cursor, req.Since)
	if err != nil {
		return cursor, err
	}
	// OTX answers 429 and, often, 504 on /pulses/subscribed (REFERENCE
	// B1): a single one is waited out, a persistent one fails the run.
	g := &feedhttp.Getter{Settings: s.Settings, Who: "otx", Secret: key,
		Header: http.Header{"X-Otx-Api-Key": {key}, "Accept": {"application/json"}}}
	maxPages := s.MaxPages
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	out := cursor
	for pages := 0; w.Next != ""; pages++ {
		if pages == maxPages {
			// Stopped at the bound, checkpointed: the next run reads on.
			return out, nil
		}
		next, err := s.page(ctx, g, w, sink)
		if err != nil {
			return out, err
		}
		if next == w.Next {
			return out, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("otx: the page %s links to itself", ioc.MaskURL(next)))
		}
		w.Next = next
		out = w.cursor()
		if err := sink.Checkpoint(ctx, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

type walk struct {
	walkCursor
	since, max time.Time
	position   int64
}

// cursor is the walk's resumable cursor, or the plain newest modified once
// it has ended.
func (w *walk) cursor() string {
	if w.Next == "" {
		return w.Max
	}
	b, _ := json.Marshal(w.walkCursor)
	return string(b)
}

func (s *Source) start(cursor string, since time.Time) (*walk, error) {
	var w walk
	if strings.HasPrefix(cursor, "{") {
		if err := json.Unmarshal([]byte(cursor), &w.walkCursor); err != nil || !vendorURL(w.Next) {
			// Not ours: start again from the bound it names, if any.
			w.walkCursor = walkCursor{Since: w.Since}
		}
		cursor = w.Since
	}
	if cursor != "" {
		t, err := parseTime(cursor)
		if err != nil {
			return nil, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("otx: the cursor %q is not a time: %w", cursor, err))
		}
		w.since = t
	} else {
		if since.IsZero() {
			now := time.Now
			if s.Now != nil {
				now = s.Now
			}
			since = now().Add(-DefaultBackfill)
		}
		w.since = since.UTC()
	}
	w.Since = w.since.Format(timeLayout)
	w.max = w.since
	if w.Max != "" {
		if t, err := parseTime(w.Max); err == nil && t.After(w.max) {
			w.max = t
		}
	}
	w.Max = w.max.Format(timeLayout)
	if w.Next == "" {
		w.Next = firstURL + "?" + url.Values{"limit": {fmt.Sprint(pageSize)}, "modified_since": {w.Since}}.Encode()
	}
	return &w, nil
}

// vendorURL accepts only links on OTX's own host: the API key goes with
// every request, and a next link comes from the answer.
func vendorURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && p.Scheme == "https" && p.Host == host && p.User == nil
}

// page reads w.Next, hands over the indicators of its pulses modified after
// the walk's bound, and returns the next link ("" at the end).
func (s *Source) page(ctx context.Context, g *feedhttp.Getter, w *walk, sink source.Sink) (string, error) {
	shown := g.Shown(w.Next)
	resp, err := g.Get(ctx, w.Next, feedhttp.Validators{})
	if err != nil {
		return "", err
	}
	defer feedhttp.Close(resp)
	b := feedhttp.NewBody(sink, resp, feedhttp.Or(s.MaxPageBytes, DefaultMaxPageBytes))
	dec := json.NewDecoder(b)
	var next *string
	err = jsonstream.Object(dec, func(key string) (bool, error) {
		switch key {
		case "results":
			return true, jsonstream.Array(dec, func(p *pulse) error {
				if err := s.pulse(ctx, w, p, sink); err != nil {
					return &feedhttp.SinkError{Err: err}
				}
				return nil
			})
		case "next":
			return true, dec.Decode(&next)
		}
		return false, nil
	})
	if err != nil {
		return "", g.BodyFailure(ctx, shown, b, err)
	}
	if next == nil || *next == "" {
		return "", nil
	}
	if !vendorURL(*next) {
		return "", ioc.Fail(ioc.FetchingDataError, fmt.Errorf("otx: the next link of %s is not on %s", shown, host))
	}
	return *next, nil
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("unknown time format %q", s)
}

// Kind declares the OpenThreatExchange kind.
func Kind() source.Kind {
	return feedhttp.VendorKind(string(builtin.OpenThreatExchange), func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
}
