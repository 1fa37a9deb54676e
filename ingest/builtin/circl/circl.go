// Package circl reads CIRCL's OSINT feed in the MISP feed format
// (builtinKind GOVERNMENT): manifest.json, then each event newer than the
// cursor, oldest first, one checkpoint per event. Only attributes marked
// for detection (to_ids) become indicators. Like every built-in source it
// imports only ioc and the standard library and never touches the store.
package circl

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/internal/jsonstream"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// The vendor's fixed endpoints; --feed-mirror rewrites the host.
const (
	feedBase    = "https://www.circl.lu/doc/misp/feed-osint/"
	manifestURL = feedBase + "manifest.json"
	sourceName  = "circl-osint"
)

// Defaults for the zero values of Source's knobs. A vendor may answer 429
// or a passing 5xx: a single one is waited out, a persistent one fails the
// run and the cursor stays.
const (
	DefaultMaxRetries   = feedhttp.DefaultMaxRetries
	DefaultMaxRetryWait = feedhttp.DefaultMaxRetryWait
	// DefaultMaxManifestBytes bounds manifest.json (a few MB for a decade
	// of events); only the uuid, timestamp, level and tags of the events
	// newer than the cursor are kept from it.
	DefaultMaxManifestBytes = 64 << 20
	// DefaultMaxEventBytes bounds one event's JSON. Events are streamed
	// attribute by attribute, so this bounds a run's time rather than its
	// memory; single events of 47 MB exist (MISP/MISP#1489).
	DefaultMaxEventBytes = 256 << 20
)

// Source reads the CIRCL OSINT feed. Every request goes through Client (the
// server's egress policy and feed mirror); the URLs are the vendor's own,
// fixed.
type Source struct {
	feedhttp.Settings // Client: never nil in the server; tests use vendortest.MirrorClient
	// MaxManifestBytes and MaxEventBytes bound the bodies (0: the defaults).
	MaxManifestBytes int64
	MaxEventBytes    int64
}

// position is an event's place in the feed's order: its timestamp, then
// its uuid, so that two events of the same second are told apart. The
// cursor is the position of the last event read, "<timestamp>/<uuid>";
// the next run reads events strictly after it.
type position struct {
	ts   int64
	uuid string
}

func (p position) String() string { return strconv.FormatInt(p.ts, 10) + "/" + p.uuid }

func (p position) after(q position) bool {
	return p.ts > q.ts || p.ts == q.ts && p.uuid > q.uuid
}

func parseCursor(c string) (position, error) {
	if c == "" {
		return position{ts: -1}, nil
	}
	ts, uuid, found := strings.Cut(c, "/")
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return position{}, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("circl: the cursor %q is not an event timestamp", c))
	}
	if !found {
		// A bare timestamp: every event of that second was read.
		uuid = "\xff"
	}
	return position{n, uuid}, nil
}

type event struct {
	position
	score int
	tags  []string
}

// Fetch walks the events after the request's cursor.
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads the events published or changed after cursor (and, on the
// first run, not before since) and hands over their to_ids attributes. It
// returns the position of the last event read.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	cursor, since := req.Cursor, req.Since
	from, err := parseCursor(cursor)
	if err != nil {
		return cursor, err
	}
	if !since.IsZero() && cursor == "" {
		from = position{ts: since.Unix() - 1, uuid: "\xff"}
	}
	events, err := s.manifest(ctx, from, sink)
	if err != nil {
		return cursor, err
	}
	r := &reader{src: s, sink: sink}
	out := cursor
	for i, ev := range events {
		if err := r.event(ctx, ev, int64(i+1)); err != nil {
			return out, err
		}
		out = ev.position.String()
		if err := sink.Checkpoint(ctx, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

type manifestEntry struct {
	Timestamp     flexInt `json:"timestamp"`
	ThreatLevelID flexInt `json:"threat_level_id"`
	Tag           []tag   `json:"Tag"`
}

type tag struct {
	Name string `json:"name"`
}

// uuidPattern keeps a manifest key that is not a uuid out of the URL path.
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// manifest lists the events after from, oldest first.
func (s *Source) manifest(ctx context.Context, from position, sink source.Sink) ([]event, error) {
	g := s.getter()
	resp, err := g.Get(ctx, manifestURL, feedhttp.Validators{})
	if err != nil {
		return nil, err
	}
	defer feedhttp.Close(resp)
	b := feedhttp.NewBody(sink, resp, feedhttp.Or(s.MaxManifestBytes, DefaultMaxManifestBytes))
	dec := json.NewDecoder(b)
	var events []event
	err = func() error {
		if err := jsonstream.Expect(dec, '{'); err != nil {
			return err
		}
		for n := int64(1); dec.More(); n++ {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			var e manifestEntry
			if err := dec.Decode(&e); err != nil {
				return err
			}
			uuid, _ := key.(string)
			if !uuidPattern.MatchString(uuid) {
				sink.Rejected(n, fmt.Sprintf("manifest: %q is not an event uuid", uuid))
				continue
			}
			ev := event{position: position{int64(e.Timestamp), strings.ToLower(uuid)}, score: score(e.ThreatLevelID), tags: tagNames(e.Tag)}
			if ev.after(from) {
				events = append(events, ev)
			}
		}
		return jsonstream.Expect(dec, '}')
	}()
	if err != nil {
		return nil, g.BodyFailure(ctx, manifestURL, b, err)
	}
	slices.SortFunc(events, func(a, b event) int {
		return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.uuid, b.uuid))
	})
	return events, nil
}

// score maps MISP's threat_level_id (1 high, 2 medium, 3 low, 4
// undefined) as OpenCTI's MISP feed connector does.
func score(level flexInt) int {
	switch level {
	case 1:
		return 90
	case 2:
		return 60
	case 3:
		return 30
	}
	return 50
}

func tagNames(tags []tag) []string {
	var out []string
	for _, t := range tags {
		out = addTag(out, t.Name)
	}
	return out
}

// addTag appends t lower-cased to tags unless it is empty, the literal
// None, or already there.
func addTag(tags []string, t string) []string {
	t = strings.ToLower(strings.TrimSpace(t))
	if t == "" || t == "none" {
		return tags
	}
	if slices.Contains(tags, t) {
		return tags
	}
	return append(tags, t)
}

// flexInt reads a number that MISP writes as a number or as a string.
type flexInt int64

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*f = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not an integer", b)
	}
	*f = flexInt(n)
	return nil
}

// flexBool reads a flag that MISP writes as true/false, 1/0 or "1"/"0".
type flexBool bool

func (f *flexBool) UnmarshalJSON(b []byte) error {
	switch strings.Trim(string(b), `"`) {
	case "true", "1", "True":
		*f = true
	default:
		*f = false
	}
	return nil
}

func (s *Source) getter() *feedhttp.Getter {
	return &feedhttp.Getter{Settings: s.Settings, Who: "circl"}
}

var errNotEvent = errors.New(`the document has no "Event"`)

// Kind declares the Government kind.
func Kind() source.Kind {
	return feedhttp.VendorKind(string(builtin.Government), func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
}
