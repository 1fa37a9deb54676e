// Package threatstream reads Anomali ThreatStream's intelligence API
// (premiumKind THREAT_PLATFORM): GET /api/v2/intelligence/ ordered by
// update_id, with update_id__gt the cursor (modified_ts__gt bounding the
// first run), following meta.next, one checkpoint per page. Like every
// premium vendor source it imports only ioc, the standard library and the
// shared feed toolkit, and never touches the store.
package threatstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// The vendor's fixed endpoint; --feed-mirror rewrites its host.
const (
	Host     = "api.threatstream.com"
	Path     = "/api/v2/intelligence/"
	firstURL = "https://" + Host + Path
	// PageSize is the limit asked per page: the size the API's own
	// answers show (REFERENCE Pb).
	PageSize = 1000
	// SourceName is the Indicator.Source of objects that name no source.
	SourceName = "threatstream"
)

// Defaults for the zero values of Source's knobs.
const (
	// DefaultBackfill bounds the first run when the runner gives no bound:
	// the whole history is never walked.
	DefaultBackfill = 7 * 24 * time.Hour
	// DefaultMaxPages bounds one run (1000 objects a page); the run stops,
	// checkpointed, and the next one goes on from the cursor.
	DefaultMaxPages = 1000
	// DefaultMaxPageBytes bounds one page's body: 1000 objects of a few
	// KiB each, with room to spare. Objects are decoded one at a time.
	DefaultMaxPageBytes = 64 << 20
)

// Source reads ThreatStream intelligence. Every request goes through
// Client (the server's egress policy and feed mirror); the URLs are the
// vendor's own, next links included.
type Source struct {
	feedhttp.Settings // Client: never nil in the server; tests use vendortest.MirrorClient

	// MaxPages and MaxPageBytes bound one run (0: the defaults).
	MaxPages     int
	MaxPageBytes int64
}

// Fetch walks the objects with the feed's username and API key (req.Feed).
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads the objects whose update_id is above cursor (on the first
// run, those modified after since, or DefaultBackfill ago) and hands them
// to sink; an object no longer active withdraws the feed's sighting. The
// cursor is the highest update_id read, checkpointed after each page.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	// user is the ThreatStream user, key the user's API key.
	cursor, since, user, key := req.Cursor, req.Since, req.Feed.Username, req.Feed.Password
	if user == "" || key == "" {
		return cursor, ioc.Fail(ioc.InvalidCredentials, errors.New("threatstream: no username or API key is set: set both on the feed"))
	}
	q := url.Values{"order_by": {"update_id"}, "limit": {strconv.Itoa(PageSize)}}
	var last int64
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n < 0 {
			return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("threatstream: the cursor %q is not an update_id", cursor))
		}
		last = n
		q.Set("update_id__gt", cursor)
	} else {
		if since.IsZero() {
			since = s.now().Add(-DefaultBackfill)
		}
		q.Set("modified_ts__gt", since.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	g := &feedhttp.Getter{Settings: s.Settings, Who: "threatstream", Secret: key,
		Header:      http.Header{"Authorization": {"apikey " + user + ":" + key}, "Accept": {"application/json"}},
		Credentials: "check the feed's username and API key"}
	w := &walk{src: s, g: g, sink: sink, last: last}
	next := firstURL + "?" + q.Encode()
	maxPages := feedhttp.Or(s.MaxPages, DefaultMaxPages)
	done := cursor // the last cursor checkpointed
	for pages := 0; next != ""; pages++ {
		if pages == maxPages {
			// Checkpointed: the next run goes on from the cursor.
			return done, nil
		}
		n, err := w.page(ctx, next)
		if err != nil {
			// What the failed page handed over is not checkpointed.
			return done, err
		}
		if n == next {
			return done, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("threatstream: the page %s links to itself", g.Shown(next)))
		}
		next = n
		if err := sink.Checkpoint(ctx, w.cursor(cursor)); err != nil {
			return done, err
		}
		done = w.cursor(cursor)
	}
	return done, nil
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// walk is one run's reading of pages.
type walk struct {
	src      *Source
	g        *feedhttp.Getter
	sink     source.Sink
	last     int64 // highest update_id read
	position int64 // objects read, for Rejected
}

func (w *walk) cursor(start string) string {
	if w.last == 0 {
		return start
	}
	return strconv.FormatInt(w.last, 10)
}

// page reads one page, hands over its objects and returns the next page's
// URL ("" at the end).
func (w *walk) page(ctx context.Context, u string) (string, error) {
	shown := w.g.Shown(u)
	resp, err := w.g.Get(ctx, u, feedhttp.Validators{})
	if err != nil {
		return "", err
	}
	defer feedhttp.Close(resp)
	b := feedhttp.NewBody(w.sink, resp, feedhttp.Or(w.src.MaxPageBytes, DefaultMaxPageBytes))
	dec := json.NewDecoder(b)
	dec.UseNumber()
	var next *string
	sawObjects := false
	err = jsonstream.Object(dec, func(key string) (bool, error) {
		switch key {
		case "objects":
			sawObjects = true
			return true, jsonstream.Array(dec, func(o *object) error {
				w.position++
				if err := w.object(ctx, o); err != nil {
					return &feedhttp.SinkError{Err: err}
				}
				return nil
			})
		case "meta":
			var m struct {
				Next *string `json:"next"`
			}
			err := dec.Decode(&m)
			next = m.Next
			return true, err
		}
		return false, nil
	})
	if err == nil && !sawObjects {
		err = errors.New("the answer has no objects")
	}
	if err != nil {
		return "", w.g.BodyFailure(ctx, shown, b, err)
	}
	if next == nil || *next == "" {
		return "", nil
	}
	n, ok := resolveNext(*next)
	if !ok {
		return "", ioc.Fail(ioc.FetchingDataError, fmt.Errorf("threatstream: the next link of %s is not on %s", shown, Host))
	}
	return n, nil
}

// resolveNext resolves a meta.next link, relative (the usual) or absolute,
// against the vendor's host, and accepts only links on that host: the API
// key goes with every request.
func resolveNext(next string) (string, bool) {
	ref, err := url.Parse(next)
	if err != nil {
		return "", false
	}
	base, _ := url.Parse(firstURL)
	u := base.ResolveReference(ref)
	if u.Scheme != "https" || u.Host != Host || u.User != nil {
		return "", false
	}
	return u.String(), true
}

// object is the part of an intelligence object tifeeds reads.
type object struct {
	Type         string       `json:"type"`
	Subtype      *string      `json:"subtype"`
	Value        string       `json:"value"`
	Status       string       `json:"status"`
	UpdateID     json.Number  `json:"update_id"`
	Confidence   *json.Number `json:"confidence"`
	Threatscore  *json.Number `json:"threatscore"`
	Itype        string       `json:"itype"`
	ThreatType   string       `json:"threat_type"`
	Source       string       `json:"source"`
	ExpirationTS string       `json:"expiration_ts"`
	Tags         []struct {
		Name string `json:"name"`
	} `json:"tags"`
	Meta struct {
		Severity string `json:"severity"`
	} `json:"meta"`
}

// object hands over one object, or counts it as rejected. Only sink
// errors are returned.
func (w *walk) object(ctx context.Context, o *object) error {
	if id, err := o.UpdateID.Int64(); err == nil && id > w.last {
		w.last = id
	}
	kind, reason := kindOf(o)
	if reason != "" {
		w.sink.Rejected(w.position, reason)
		return nil
	}
	value, err := ioc.Normalize(kind, o.Value)
	if err != nil {
		w.sink.Rejected(w.position, fmt.Sprintf("invalid %s %q: %v", o.Type, truncate(o.Value), err))
		return nil
	}
	ind := ioc.Indicator{Kind: kind, Value: value, Source: SourceName, Score: score(o), Tags: tags(o),
		Revoked: !strings.EqualFold(o.Status, "active")}
	if src := strings.TrimSpace(o.Source); src != "" && src != "None" {
		// The same value may come from several ThreatStream sources; a
		// withdrawal by one must not remove another's report.
		ind.Source = src
	}
	if t, ok := parseTime(o.ExpirationTS); ok {
		ind.ValidUntil = t
	}
	return w.sink.Indicator(ctx, ind)
}

// kindOf maps type (and, for hashes, subtype: ThreatStream types every
// hash md5) to a kind, or says why the object is skipped.
func kindOf(o *object) (ioc.Kind, string) {
	switch strings.ToLower(o.Type) {
	case "ip":
		return ioc.IP, ""
	case "domain":
		return ioc.Domain, ""
	case "url":
		return ioc.URL, ""
	case "md5", "hash":
		sub := ""
		if o.Subtype != nil {
			sub = strings.ToUpper(strings.TrimSpace(*o.Subtype))
		}
		switch sub {
		case "MD5":
			return ioc.MD5, ""
		case "SHA1":
			return ioc.SHA1, ""
		case "SHA256":
			return ioc.SHA256, ""
		case "":
			// No subtype: the length tells.
			if kind, ok := ioc.HashKind(strings.TrimSpace(o.Value)); ok {
				return kind, ""
			}
			return "", fmt.Sprintf("skipped: hash %q is not an MD5, SHA1 or SHA256", truncate(o.Value))
		}
		return "", fmt.Sprintf("skipped: hash subtype %s is not a kind tifeeds keeps", truncate(sub))
	}
	return "", fmt.Sprintf("skipped: %s is not a kind tifeeds keeps", truncate(o.Type))
}

// severityScore is the score of an object that has neither a confidence
// nor a threatscore (REFERENCE Pb's recommendation).
var severityScore = map[string]int{"low": 25, "medium": 50, "high": 75, "very-high": 90}

// defaultScore is the score of an object that gives none at all.
const defaultScore = 50

// score is confidence, or when it is −1 (unknown) threatscore, or the
// severity's score.
func score(o *object) int {
	for _, n := range []*json.Number{o.Confidence, o.Threatscore} {
		if n == nil {
			continue
		}
		if f, err := n.Float64(); err == nil && f >= 0 {
			return min(int(f+0.5), 100)
		}
	}
	if s, ok := severityScore[strings.ToLower(o.Meta.Severity)]; ok {
		return s
	}
	return defaultScore
}

// tags are itype, threat_type and the names of tags, lower-cased, without
// repeats or the literal None.
func tags(o *object) []string {
	var out []string
	add := func(t string) {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" || t == "none" {
			return
		}
		for _, have := range out {
			if have == t {
				return
			}
		}
		out = append(out, t)
	}
	add(o.Itype)
	add(o.ThreatType)
	for _, t := range o.Tags {
		add(t.Name)
	}
	return out
}

func parseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// truncate shortens what a rejection quotes.
func truncate(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// Kind declares the ThreatPlatform premium kind.
func Kind() source.Kind {
	return premium.VendorKind(premium.ThreatPlatform, func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
}
