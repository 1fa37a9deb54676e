package premium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ioc"
)

// ErrLimitReached ends a feed-list fetch that handed over its limit; the
// returned cursor resumes after the last object handed over.
var ErrLimitReached = errors.New("premium: limit of indicators per poll reached")

// Defaults of a FeedListSource's zero fields.
const (
	FeedListTimeout  = 5 * time.Minute
	feedListMaxBytes = 100 << 20
	defaultScore     = 90 // the spec's score for a source that does not tune it
)

// FeedListSource fetches one feed of the feed-list platform: a JSON document
// at the feed's endpoint, read as a stream (never held whole), either an
// array of indicator objects or an object whose "indicators" member is one:
//
//	{"indicators": [{"type": "ip", "value": "192.0.2.7", "score": 80,
//	  "source": "botnet_c2", "tags": ["c2"], "valid_until": "2026-12-31T00:00:00Z"}]}
//
// type is one of url, ip, domain, md5, sha1, sha256 (the TSV names
// md5-hash, sha1-hash and sha256-hash are accepted too); value is required;
// score (0 to 100) defaults to 90, source to the feed collection's id;
// tags and valid_until are optional. Other members are ignored. Objects that
// do not conform are counted as rejected with their position, not fatal.
type FeedListSource struct {
	Endpoint string        // with its key
	Client   *http.Client  // nil: the egress policy's defaults (private destinations refused)
	Timeout  time.Duration // whole request, body included; FeedListTimeout when 0
	MaxBytes int64         // the document must be under it; 100 MB when 0
}

// Fetch reads the document into sink. A run that stops at limit (0: none)
// checkpoints a cursor, "object:N", from which the next run goes on; a run
// that reads the document to its end returns the empty cursor, since each
// poll reads the whole document afresh.
func (s *FeedListSource) Fetch(ctx context.Context, cursor string, limit int64, sink ioc.Sink) (string, error) {
	skip, err := parseObjectCursor(cursor)
	if err != nil {
		skip = 0 // a cursor of another version: read from the start
	}
	ep, err := ParseEndpoint(s.Endpoint, "")
	if err != nil {
		return cursor, ioc.Fail(ioc.InvalidURL, fmt.Errorf("premium: feed-list endpoint %w", err))
	}
	timeout := cmpOr(s.Timeout, FeedListTimeout)
	maxBytes := cmpOr(s.MaxBytes, feedListMaxBytes)
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, s.Endpoint, nil)
	if err != nil {
		return cursor, ioc.Fail(ioc.InvalidURL, fmt.Errorf("premium: unable to make a request for the endpoint: %w", err))
	}
	req.Header.Set("Accept", "application/json")
	client := s.Client
	if client == nil {
		client = defaultClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return cursor, ctx.Err()
		}
		if reqCtx.Err() != nil {
			err = fmt.Errorf("no answer within %s: %w", timeout, err)
		}
		return cursor, ioc.HTTPRequestFailure("premium", err)
	}
	defer resp.Body.Close()
	if err := ioc.HTTPStatusFailure("premium", resp); err != nil {
		return cursor, err
	}
	if resp.ContentLength >= maxBytes {
		return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("premium: the feed document must be under %d MB", maxBytes>>20))
	}
	body := &cappedReader{r: ioc.ProgressReader(sink, resp.Body, resp.ContentLength), left: maxBytes - 1} // the document must be under maxBytes
	r := &docReader{dec: json.NewDecoder(body), sink: sink, source: ep.CollectionID,
		skip: skip, limit: limit}
	err = r.read(ctx)
	if err == nil {
		// Nothing but white space may follow the document.
		if _, terr := r.dec.Token(); !errors.Is(terr, io.EOF) {
			err = ioc.Fail(ioc.FetchingDataError, errors.New("premium: data after the end of the feed document"))
		}
	}
	switch {
	case errors.Is(err, ErrLimitReached):
		next := objectCursor(r.pos)
		if cerr := sink.Checkpoint(ctx, next); cerr != nil {
			return cursor, cerr
		}
		return next, err
	case err == nil:
		return "", nil
	case ctx.Err() != nil:
		return cursor, ctx.Err()
	case body.over:
		return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("premium: the feed document must be under %d MB", maxBytes>>20))
	case reqCtx.Err() != nil:
		return cursor, ioc.Fail(ioc.ConnectionError, fmt.Errorf("premium: the feed document did not arrive within %s", timeout))
	case body.err != nil:
		// The connection failed while the document was read.
		return cursor, ioc.HTTPRequestFailure("premium", fmt.Errorf("the feed document broke off: %w", body.err))
	}
	var fe *ioc.FetchError
	if errors.As(err, &fe) {
		return cursor, err
	}
	// A sink's error (the store) is not the source's fault.
	if r.sinkErr {
		return cursor, err
	}
	return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("premium: the feed document broke off: %w", err))
}

// docReader walks the JSON document token by token, decoding one indicator
// object at a time.
type docReader struct {
	dec     *json.Decoder
	sink    ioc.Sink
	source  string
	skip    int64 // objects a previous run handed over already
	limit   int64
	pos     int64 // objects read so far, from 1
	handed  int64
	sinkErr bool
}

func (r *docReader) read(ctx context.Context) error {
	tok, err := r.dec.Token()
	if err != nil {
		return notJSON(err)
	}
	switch tok {
	case json.Delim('['):
		return r.readArray(ctx)
	case json.Delim('{'):
	default:
		return ioc.Fail(ioc.FetchingDataError, errors.New("premium: the feed document is neither an array nor an object"))
	}
	found := false
	for r.dec.More() {
		key, err := r.dec.Token()
		if err != nil {
			return notJSON(err)
		}
		if key == "indicators" {
			if tok, err := r.dec.Token(); err != nil || tok != json.Delim('[') {
				return ioc.Fail(ioc.FetchingDataError, errors.New(`premium: "indicators" is not an array`))
			}
			found = true
			if err := r.readArray(ctx); err != nil {
				return err
			}
			continue
		}
		var skipped json.RawMessage
		if err := r.dec.Decode(&skipped); err != nil {
			return notJSON(err)
		}
	}
	if !found {
		return ioc.Fail(ioc.FetchingDataError, errors.New(`premium: the feed document has no "indicators" array`))
	}
	if _, err := r.dec.Token(); err != nil { // the closing '}'
		return notJSON(err)
	}
	return nil
}

// readArray reads the objects of an array whose '[' has been read.
func (r *docReader) readArray(ctx context.Context) error {
	for r.dec.More() {
		var obj feedObject
		err := r.dec.Decode(&obj)
		r.pos++
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return notJSON(err)
		}
		if r.pos <= r.skip {
			continue
		}
		if err != nil { // a member of the wrong JSON type: this object only
			r.sink.Rejected(r.pos, "not an indicator object: "+clip(err.Error()))
			continue
		}
		ind, reason := obj.indicator(r.source)
		if reason != "" {
			r.sink.Rejected(r.pos, reason)
			continue
		}
		if err := r.sink.Indicator(ctx, ind); err != nil {
			r.sinkErr = true
			return err
		}
		r.handed++
		if r.limit > 0 && r.handed >= r.limit && r.dec.More() {
			return ErrLimitReached
		}
	}
	if _, err := r.dec.Token(); err != nil { // the closing ']'
		return notJSON(err)
	}
	return nil
}

type feedObject struct {
	Type       string   `json:"type"`
	Value      string   `json:"value"`
	Score      *int     `json:"score"`
	Source     string   `json:"source"`
	Tags       []string `json:"tags"`
	ValidUntil string   `json:"valid_until"`
}

var feedKinds = map[string]ioc.Kind{
	"url": ioc.URL, "ip": ioc.IP, "domain": ioc.Domain, "md5": ioc.MD5, "sha1": ioc.SHA1, "sha256": ioc.SHA256,
	"md5-hash": ioc.MD5, "sha1-hash": ioc.SHA1, "sha256-hash": ioc.SHA256,
}

// indicator checks the object and returns it as an indicator, or the
// reason it is rejected.
func (o feedObject) indicator(collection string) (ioc.Indicator, string) {
	kind, ok := feedKinds[strings.ToLower(strings.TrimSpace(o.Type))]
	if !ok {
		return ioc.Indicator{}, fmt.Sprintf("unknown type %q (want url, ip, domain, md5, sha1 or sha256)", clip(o.Type))
	}
	value, err := ioc.Normalize(kind, o.Value)
	if err != nil {
		return ioc.Indicator{}, clip(err.Error())
	}
	ind := ioc.Indicator{Kind: kind, Value: value, Score: defaultScore, Source: collection}
	if o.Score != nil {
		if *o.Score < 0 || *o.Score > 100 {
			return ioc.Indicator{}, fmt.Sprintf("score %d is not between 0 and 100", *o.Score)
		}
		ind.Score = *o.Score
	}
	if src := strings.TrimSpace(o.Source); src != "" {
		ind.Source = clip(src)
	}
	for _, t := range o.Tags {
		if t = strings.TrimSpace(t); t != "" {
			ind.Tags = append(ind.Tags, clip(t))
		}
	}
	if o.ValidUntil != "" {
		until, err := time.Parse(time.RFC3339, o.ValidUntil)
		if err != nil {
			return ioc.Indicator{}, fmt.Sprintf("valid_until %q is not an RFC 3339 time", clip(o.ValidUntil))
		}
		ind.ValidUntil = until.UTC()
	}
	return ind, ""
}

func notJSON(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("premium: the feed document is not valid JSON: %w", err))
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

func objectCursor(n int64) string { return "object:" + strconv.FormatInt(n, 10) }

func parseObjectCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(c, "object:"), 10, 64)
	if err != nil || n < 0 || !strings.HasPrefix(c, "object:") {
		return 0, fmt.Errorf("premium: %q is not a feed-list cursor", c)
	}
	return n, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// cappedReader fails once more than left bytes have been read; err keeps
// the first error of the body other than its end.
type cappedReader struct {
	r    io.Reader
	left int64
	over bool
	err  error
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, errors.New("premium: document too large")
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// defaultClient is the client of a FeedListSource without one.
var defaultClient = sync.OnceValue(func() *http.Client { return egress.NewClient(egress.Options{}) })
