package premium

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// Defaults of a FeedListSource's zero fields.
const (
	FeedListTimeout  = 5 * time.Minute
	feedListMaxBytes = 100 << 20
	defaultScore     = 90 // the spec's score for a source that does not tune it
)

// FeedListSource fetches one feed of the feed-list platform (SOCRadar's
// threat-intelligence feed lists): the document at the feed's endpoint,
// {base}/<feed_collection_id>.json?key=<api_key>&v=2, read as a stream
// (never held whole). It is a JSON array of feed objects, or an object whose
// "data" member is one:
//
//	[{"feed": "203.0.113.7", "feed_type": "ip", "first_seen_date": "2026-01-01 10:00:00",
//	  "latest_seen_date": "2026-01-02 10:00:00", "maintainer_name": "SOCRadar",
//	  "extra_info": {"score": 80, "seen_count": 3}}]
//
// feed_type ip/ipv4/ipv6, domain/hostname, url, md5/sha1/sha256/hash (a
// hash's length decides its kind); the score is extra_info.score (0 to 100,
// 90 when absent); the maintainer, lower-cased, is the tag; the list's name
// (the indicators' Source) is the collection id. The dates and seen_count
// are not kept: a sighting's first and last seen are tifeeds' own, and the
// snapshot decides what is live. Objects that do not conform are counted
// as rejected with their position, not fatal.
//
// Each poll downloads the whole document (the platform has no increments).
// It is a snapshot: what a complete reading no longer holds expires. A
// document with more indicators than one poll may bring in (limit) is read
// over several polls, a walk: each poll skips the objects the walk has read
// and hands over the next ones, and the cursor keeps where the walk is, when
// its first poll started and a SHA-256 of the objects read so far. The poll
// that reads the end names the list complete since the walk's start, so that
// what earlier polls of the walk handed over stays. When the objects before
// the resume point are not those the walk read (the document changed
// under it), the walk still goes on to the end but expires nothing: an
// object that moved ahead of the resume point would be expired while
// listed; the next walk starts afresh.
type FeedListSource struct {
	// Client is the egress client: the endpoint is typed by the user and is
	// never mirrored. nil: the egress policy's defaults (private
	// destinations refused). The retries are feedhttp.Getter's defaults.
	feedhttp.Settings
	Timeout  time.Duration // whole request, body included; FeedListTimeout when 0
	MaxBytes int64         // the document may be up to it; 100 MB when 0
}

// feedWalk is the cursor of a walk in progress, as JSON; the empty cursor
// is no walk: the next poll reads from the start.
type feedWalk struct {
	// Version tells this format from the "object:N" of the earlier one,
	// which restarts the walk.
	Version int `json:"v"`
	// Started is the start of the walk's first poll (the runner's clock).
	Started time.Time `json:"started"`
	// Objects is how many objects of the array the walk has read.
	Objects int64 `json:"objects"`
	// Digest is the SHA-256 of those objects' bytes, in order.
	Digest string `json:"digest"`
	// Changed: the document changed during the walk; it expires nothing.
	Changed bool `json:"changed,omitempty"`
}

const walkVersion = 2

func parseWalk(cursor string) (feedWalk, bool) {
	var w feedWalk
	if cursor == "" || json.Unmarshal([]byte(cursor), &w) != nil || w.Version != walkVersion ||
		w.Objects <= 0 || w.Started.IsZero() {
		return feedWalk{}, false
	}
	return w, true
}

func (w feedWalk) String() string {
	b, _ := json.Marshal(w)
	return string(b)
}

// Fetch reads the document at the feed's URL into sink, at most req.Limit
// indicators of it, and checkpoints where the next poll goes on.
func (s *FeedListSource) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, source.UpToLimit(sink))
}

// fetch reads the document at req.Feed.URL (the feed's URL, with its key)
// into sink. req.Started is when the run started (on the clock of the
// runner, which expires by it). A run that stops at req.Limit (0: none) checkpoints the walk's cursor and returns it with
// source.ErrLimitReached; a run that reads the document to its end returns the
// empty cursor. A cursor in another format (the earlier "object:N")
// starts a new walk.
func (s *FeedListSource) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	cursor, started, limit, endpoint := req.Cursor, req.Started, req.Limit, req.Feed.URL
	walk, resumed := parseWalk(cursor)
	if !resumed {
		walk = feedWalk{Version: walkVersion, Started: started.UTC()}
	}
	ep, err := ParseEndpoint(endpoint, "")
	if err != nil {
		return cursor, ioc.Fail(ioc.InvalidURL, fmt.Errorf("feed list: the API endpoint %w", err))
	}
	settings := s.Settings
	if settings.Client == nil {
		settings.Client = defaultClient()
	}
	g := &feedhttp.Getter{Settings: settings, Who: "feed list " + ep.CollectionID, Secret: ep.Key,
		Header:      http.Header{"Accept": {"application/json"}},
		Credentials: "check the API key in the feed's API Endpoint"}
	timeout := cmpOr(s.Timeout, FeedListTimeout)
	maxBytes := cmpOr(s.MaxBytes, feedListMaxBytes)
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	timedOut := func() error {
		if ctx.Err() == nil && reqCtx.Err() != nil {
			return ioc.Fail(ioc.ConnectionError, fmt.Errorf("%s: the feed document did not arrive within %s", g.Who, timeout))
		}
		return nil
	}
	resp, err := g.Get(reqCtx, endpoint, feedhttp.Validators{})
	if err != nil {
		if terr := timedOut(); terr != nil {
			return cursor, terr
		}
		return cursor, err
	}
	defer feedhttp.Close(resp)
	if resp.ContentLength > maxBytes {
		return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("%s: the feed document is %d bytes, over the cap of %d MB",
			g.Who, resp.ContentLength, maxBytes>>20))
	}
	body := feedhttp.NewBody(sink, resp, maxBytes)
	r := &docReader{dec: json.NewDecoder(body), sink: sink, source: ep.CollectionID, limit: limit,
		skip: walk.Objects, digest: walk.Digest, sum: sha256.New()}
	err = r.read(ctx)
	if err == nil {
		// Nothing but white space may follow the document.
		if _, terr := r.dec.Token(); !errors.Is(terr, io.EOF) {
			err = ioc.Fail(ioc.FetchingDataError, errors.New("feed list: data after the end of the feed document"))
		}
	}
	switch {
	case errors.Is(err, source.ErrLimitReached):
		next := feedWalk{Version: walkVersion, Started: walk.Started, Objects: r.pos,
			Digest: hex.EncodeToString(r.sum.Sum(nil)), Changed: walk.Changed || r.changed}
		if cerr := sink.Checkpoint(ctx, next.String()); cerr != nil {
			return cursor, cerr
		}
		return next.String(), err
	case err != nil:
		if terr := timedOut(); terr != nil {
			return cursor, terr
		}
		if body.Exceeded() {
			return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("%s: the feed document is over the cap of %d MB", g.Who, maxBytes>>20))
		}
		return cursor, g.BodyFailure(ctx, "the feed document", body, err)
	}
	// The end of the document: the list is complete, unless it changed
	// under a walk of several polls or ended before the walk's position.
	switch {
	case r.pos < walk.Objects || walk.Changed || r.changed:
	case resumed:
		sink.ListComplete(ep.CollectionID, walk.Started)
	default:
		sink.ListComplete(ep.CollectionID, time.Time{})
	}
	return "", nil
}

// docReader walks the JSON document token by token, decoding one feed
// object at a time.
type docReader struct {
	dec     *json.Decoder
	sink    source.Sink
	source  string
	limit   int64
	skip    int64     // objects the walk's earlier polls read
	digest  string    // their SHA-256, from the cursor
	sum     hash.Hash // of the objects read so far
	changed bool      // the objects skipped are not those the walk read
	pos     int64     // objects read so far, from 1
	handed  int64
}

func (r *docReader) read(ctx context.Context) error {
	tok, err := r.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('['):
		return r.readArray(ctx)
	case json.Delim('{'):
	default:
		return ioc.Fail(ioc.FetchingDataError, errors.New("feed list: the feed document is neither an array nor an object"))
	}
	found := false
	var message string
	for r.dec.More() {
		key, err := r.dec.Token()
		if err != nil {
			return err
		}
		if key == "data" && !found {
			if tok, err := r.dec.Token(); err != nil {
				return err
			} else if tok != json.Delim('[') {
				return ioc.Fail(ioc.FetchingDataError, errors.New(`feed list: "data" is not an array`))
			}
			found = true
			if err := r.readArray(ctx); err != nil {
				return err
			}
			continue
		}
		var member json.RawMessage
		if err := r.dec.Decode(&member); err != nil {
			return err
		}
		if key == "message" {
			_ = json.Unmarshal(member, &message)
		}
	}
	if _, err := r.dec.Token(); err != nil { // the closing '}'
		return err
	}
	if !found {
		err := errors.New(`feed list: the feed document has no "data" array`)
		if message != "" {
			err = fmt.Errorf(`feed list: the feed document has no "data" array; the platform says %q`, clip(message))
		}
		return ioc.Fail(ioc.FetchingDataError, err)
	}
	return nil
}

// readArray reads the objects of an array whose '[' has been read.
func (r *docReader) readArray(ctx context.Context) error {
	for r.dec.More() {
		var raw json.RawMessage
		if err := r.dec.Decode(&raw); err != nil {
			return err
		}
		r.pos++
		r.sum.Write(raw)
		if r.pos <= r.skip {
			if r.pos == r.skip && hex.EncodeToString(r.sum.Sum(nil)) != r.digest {
				r.changed = true
			}
			continue
		}
		ind, reason := feedIndicator(raw, r.source)
		if reason != "" {
			r.sink.Rejected(r.pos, reason)
			continue
		}
		if err := r.sink.Indicator(ctx, ind); err != nil {
			return &feedhttp.SinkError{Err: err}
		}
		r.handed++
		if r.limit > 0 && r.handed >= r.limit && r.dec.More() {
			return source.ErrLimitReached
		}
	}
	if _, err := r.dec.Token(); err != nil { // the closing ']'
		return err
	}
	return nil
}

// feedObject is one object of a feed list.
type feedObject struct {
	Feed       string          `json:"feed"`
	FeedType   string          `json:"feed_type"`
	Maintainer string          `json:"maintainer_name"`
	ExtraInfo  json.RawMessage `json:"extra_info"`
}

// feedKinds maps feed_type to a kind; hash types are decided by length.
var feedKinds = map[string]ioc.Kind{
	"ip": ioc.IP, "ipv4": ioc.IP, "ipv6": ioc.IP, "domain": ioc.Domain, "hostname": ioc.Domain, "url": ioc.URL,
	"md5": ioc.MD5, "sha1": ioc.SHA1, "sha256": ioc.SHA256, "hash": ioc.MD5,
}

// hashKinds are the hash kinds by the length of their hex value.
var hashKinds = map[int]ioc.Kind{32: ioc.MD5, 40: ioc.SHA1, 64: ioc.SHA256}

// feedIndicator maps one feed object to an indicator, or says why it is
// rejected.
func feedIndicator(raw json.RawMessage, collection string) (ioc.Indicator, string) {
	var o feedObject
	if err := json.Unmarshal(raw, &o); err != nil {
		return ioc.Indicator{}, "not a feed object: " + clip(err.Error())
	}
	typ := strings.ToLower(strings.TrimSpace(o.FeedType))
	kind, ok := feedKinds[typ]
	if !ok {
		if typ == "" {
			return ioc.Indicator{}, "no feed_type"
		}
		return ioc.Indicator{}, fmt.Sprintf("skipped: feed_type %q is not a kind tifeeds keeps", clip(o.FeedType))
	}
	rawValue := strings.TrimSpace(o.Feed)
	if rawValue == "" {
		return ioc.Indicator{}, "no feed value"
	}
	var port string
	switch kind {
	case ioc.MD5, ioc.SHA1, ioc.SHA256:
		if kind, ok = hashKinds[len(rawValue)]; !ok {
			return ioc.Indicator{}, fmt.Sprintf("%s: a hash of %d characters is not an md5, sha1 or sha256", typ, len(rawValue))
		}
	case ioc.IP:
		rawValue, port = splitPort(rawValue)
	}
	value, err := ioc.Normalize(kind, rawValue)
	if err != nil {
		return ioc.Indicator{}, fmt.Sprintf("%s: %s", typ, clip(err.Error()))
	}
	score, reason := feedScore(o.ExtraInfo)
	if reason != "" {
		return ioc.Indicator{}, reason
	}
	ind := ioc.Indicator{Kind: kind, Value: value, Score: score, Source: collection}
	if m := strings.ToLower(strings.TrimSpace(o.Maintainer)); m != "" && m != "none" {
		ind.Tags = append(ind.Tags, clip(m))
	}
	if port != "" {
		ind.Tags = append(ind.Tags, "port:"+port)
	}
	return ind, ""
}

// feedScore reads extra_info.score: a number or a numeric string from 0 to
// 100 (a fraction is rounded); absent or null, the default.
func feedScore(extra json.RawMessage) (int, string) {
	var info struct {
		Score json.RawMessage `json:"score"`
	}
	if len(extra) == 0 || string(extra) == "null" {
		return defaultScore, ""
	}
	if err := json.Unmarshal(extra, &info); err != nil {
		return 0, "extra_info is not an object"
	}
	s := strings.Trim(strings.TrimSpace(string(info.Score)), `"`)
	if s == "" || s == "null" {
		return defaultScore, ""
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, fmt.Sprintf("extra_info.score %s is not a number", clip(string(info.Score)))
	}
	if f < 0 || f > 100 {
		return 0, fmt.Sprintf("extra_info.score %s is not between 0 and 100", clip(s))
	}
	return int(math.Round(f)), ""
}

// splitPort splits "203.0.113.5:443" or "[2001:db8::5]:443" into the
// address and the port; a value that is an address already is returned
// whole (a bare IPv6 address cannot carry a port without brackets).
func splitPort(v string) (addr, port string) {
	if net.ParseIP(v) != nil {
		return v, ""
	}
	host, p, err := net.SplitHostPort(v)
	if err != nil || net.ParseIP(host) == nil {
		return v, ""
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return v, ""
	}
	return host, p
}

// clip shortens s to at most 200 bytes, on a character boundary (a value
// cut inside a character would not be valid UTF-8, which PostgreSQL
// refuses).
func clip(s string) string {
	const most = 200
	if len(s) <= most {
		return s
	}
	n := most
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// defaultClient is the client of a FeedListSource without one.
var defaultClient = sync.OnceValue(func() *http.Client { return egress.NewClient(egress.Options{}) })

// FeedListOptions tunes the feed-list kind; zero values take the spec's
// limits and feedhttp's retry defaults.
type FeedListOptions struct {
	Timeout  time.Duration
	MaxBytes int64
	PerPoll  int64

	MaxRetries   int
	MaxRetryWait time.Duration
	RetryBackoff time.Duration
}

// FeedListKind declares the feed-list platform's premium kind: each poll
// reads the feed's document, at most PerPoll indicators of it; a document
// with more is read over several polls, each going on from the cursor, and
// expires what it no longer holds once read to its end. It fetches through
// the egress client, never the mirror: the endpoint is the user's.
func FeedListKind(o FeedListOptions) source.Kind {
	spec, _ := Lookup(FeedList)
	return source.Kind{
		Key: string(FeedList),
		New: func(e source.Env) source.Source {
			settings := feedhttp.Settings{Client: e.Client, MaxRetries: o.MaxRetries, MaxRetryWait: o.MaxRetryWait,
				RetryBackoff: o.RetryBackoff}
			return &FeedListSource{Settings: settings, Timeout: o.Timeout, MaxBytes: cmpOr(o.MaxBytes, spec.MaxBytes)}
		},
		RunLimit: cmpOr(o.PerPoll, spec.PerPoll),
	}
}
