package vendortest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// SOCRadarHost is the host of SOCRadar's platform API.
const SOCRadarHost = "platform.socradar.com"

// SOCRadarFeedListPath is the path of SOCRadar's feed lists, each at
// <path><feed_collection_id>.json?key=<api_key>&v=2.
const SOCRadarFeedListPath = "/api/threat/intelligence/feed_list/"

// SOCRadarEndpoint returns the feed-list endpoint a user would type for
// collection on the server at base ("https://platform.socradar.com", or a
// loopback server's URL: the endpoint is the user's, never mirrored).
func SOCRadarEndpoint(base, collection, key string) string {
	return strings.TrimSuffix(base, "/") + SOCRadarFeedListPath + collection + ".json?key=" + key + "&v=2"
}

// SOCRadarItem is one object of a feed list.
type SOCRadarItem struct {
	Feed       string         `json:"feed"`
	FeedType   string         `json:"feed_type"`
	FirstSeen  string         `json:"first_seen_date"`
	LatestSeen string         `json:"latest_seen_date"`
	Maintainer string         `json:"maintainer_name"`
	ExtraInfo  map[string]any `json:"extra_info,omitempty"`
}

// SOCRadarDocument returns items as a feed-list document: a JSON array, or
// {"data": [...], "is_success": true, ...} when wrapped.
func SOCRadarDocument(items []SOCRadarItem, wrapped bool) []byte {
	var b bytes.Buffer
	if wrapped {
		b.WriteString(`{"is_success": true, "message": "Success", "response_code": 200, "data": `)
	}
	b.WriteString("[")
	for i, it := range items {
		if i > 0 {
			b.WriteString(",\n")
		}
		j, _ := json.Marshal(it)
		b.Write(j)
	}
	b.WriteString("]")
	if wrapped {
		b.WriteString("}")
	}
	return b.Bytes()
}

// SOCRadarIPs returns n ip items, 10.<a>.<b>.<c> counted from first (test
// volume; not documentation addresses, there are too few of those), with
// score 70 and maintainer "SOCRadar".
func SOCRadarIPs(first, n int) []SOCRadarItem {
	items := make([]SOCRadarItem, 0, n)
	for i := first; i < first+n; i++ {
		items = append(items, SOCRadarItem{Feed: fmt.Sprintf("11.%d.%d.%d", i>>16&255, i>>8&255, i&255), FeedType: "ip",
			FirstSeen: "2026-01-01 00:00:00", LatestSeen: "2026-01-02 00:00:00", Maintainer: "SOCRadar",
			ExtraInfo: map[string]any{"score": 70, "seen_count": 1}})
	}
	return items
}

// SOCRadar answers like SOCRadar's feed-list API: GET
// /api/threat/intelligence/feed_list/<collection>.json?key=<key>&v=2 gives
// the collection's whole current document (no paging, no increments, no
// validators). A wrong key gets 401 with SOCRadar's JSON error, an unknown
// collection 404. Failures on demand: Fail (401/403, 429 with Retry-After,
// 5xx), Cut, Declare, Pad. Set the fields before serving, or through the
// methods while a test runs; it is safe for concurrent use.
type SOCRadar struct {
	mu sync.Mutex
	// Key is the API key accepted.
	Key string
	// Lists holds each collection's document (see SOCRadarDocument).
	Lists map[string][]byte
	// Status, when non-zero, is answered instead of the document, with
	// RetryAfter as its Retry-After header when set; FailTimes, when
	// positive, limits it to that many answers.
	Status     int
	RetryAfter string
	FailTimes  int
	// Cut sends the headers of the whole document and then half of it,
	// then closes the connection.
	Cut bool
	// Declare, when positive, is sent as the Content-Length, with only the
	// start of the document after it: a document announced too big.
	Declare int64
	// Pad, when positive, sends the document unannounced (chunked) with Pad
	// bytes of white space after its opening '[': a document that grows
	// past a cap while read.
	Pad int64
	// Generate, when set for a collection that Lists does not hold, writes
	// its document as it is sent (WriteSOCRadarDocument, say), without a
	// Content-Length; Cut, Declare and Pad do not apply to it.
	Generate map[string]func(w io.Writer) error

	served int
}

// Set replaces a collection's document.
func (s *SOCRadar) Set(collection string, doc []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Lists == nil {
		s.Lists = map[string][]byte{}
	}
	s.Lists[collection] = doc
}

// SetKey changes the API key accepted (a key rotated upstream).
func (s *SOCRadar) SetKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Key = key
}

// Fail makes the next n answers status (n <= 0: every answer until
// Fail(0, 0, "")), with Retry-After retryAfter when it is not empty.
func (s *SOCRadar) Fail(status, n int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Status, s.FailTimes, s.RetryAfter = status, n, retryAfter
}

// SetBody sets Cut, Declare and Pad at once (zero values: a normal body).
func (s *SOCRadar) SetBody(cut bool, declare, pad int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Cut, s.Declare, s.Pad = cut, declare, pad
}

// Served returns how many times a document was sent.
func (s *SOCRadar) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

func socradarError(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"is_success": false, "message": message, "response_code": code})
}

func (s *SOCRadar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name, ok := strings.CutPrefix(r.URL.Path, SOCRadarFeedListPath)
	collection, isJSON := strings.CutSuffix(name, ".json")
	doc, known := s.Lists[collection]
	gen := s.Generate[collection]
	known = known || gen != nil
	switch {
	case r.Method != http.MethodGet:
		socradarError(w, http.StatusMethodNotAllowed, "Method not allowed")
		return
	case r.URL.Query().Get("key") != s.Key:
		socradarError(w, http.StatusUnauthorized, "Invalid API key")
		return
	case !ok || !isJSON || !known:
		socradarError(w, http.StatusNotFound, "Feed list not found")
		return
	}
	if s.Status != 0 {
		if s.FailTimes > 0 {
			s.FailTimes--
			if s.FailTimes == 0 {
				defer func() { s.Status = 0 }()
			}
		}
		if s.RetryAfter != "" {
			w.Header().Set("Retry-After", s.RetryAfter)
		}
		msg := http.StatusText(s.Status)
		if s.Status == http.StatusTooManyRequests {
			msg = "Rate limit has been exceeded"
		}
		socradarError(w, s.Status, msg)
		return
	}
	s.served++
	w.Header().Set("Content-Type", "application/json")
	if doc == nil && gen != nil {
		gen(w)
		return
	}
	switch {
	case s.Declare > 0:
		w.Header().Set("Content-Length", strconv.FormatInt(s.Declare, 10))
		w.Write(doc[:min(len(doc), 64)])
		hangUp(w)
	case s.Pad > 0:
		w.Write(doc[:1])
		space := bytes.Repeat([]byte(" "), 1<<20)
		for left := s.Pad; left > 0; left -= int64(len(space)) {
			if _, err := w.Write(space[:min(int64(len(space)), left)]); err != nil {
				return
			}
		}
		w.Write(doc[1:])
	case s.Cut:
		w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
		w.Write(doc[:len(doc)/2])
		hangUp(w)
	default:
		w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
		w.Write(doc)
	}
}

// hangUp flushes what was written and closes the connection.
func hangUp(w http.ResponseWriter) {
	w.(http.Flusher).Flush()
	if h, ok := w.(http.Hijacker); ok {
		if conn, _, err := h.Hijack(); err == nil {
			conn.Close()
		}
	}
}
