// Package taxiitest runs a small TAXII 2.1 server on loopback for tests and
// benchmarks: discovery, one API root, collections, and the objects
// endpoint with added_after, limit, next and the X-TAXII-Date-Added-*
// headers. Hooks let a test make it fail, throttle or misbehave.
package taxiitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MediaType is the TAXII 2.1 media type the server answers with and wants
// in Accept.
const MediaType = "application/taxii+json;version=2.1"

// TimeLayout is how the server writes timestamps (TAXII: RFC 3339, UTC,
// microseconds as most servers do).
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Collection describes one collection of the API root.
type Collection struct {
	ID      string
	Title   string
	Alias   string
	CanRead bool
}

type object struct {
	added time.Time
	json  []byte
}

// Request is what the server saw of one request, for assertions.
type Request struct {
	Path       string
	AddedAfter string
	Next       string
	Limit      string
	Accept     string
	// Refused is set on a request whose next the server refused (Sessions).
	Refused bool
}

// Server is a TAXII 2.1 server on loopback. Configure its fields before the
// first request; add objects at any time.
type Server struct {
	*httptest.Server
	// Username and Password, when Username is set, are the only basic
	// credentials accepted.
	Username, Password string
	// APIRootPath is the API root's path, e.g. "/api1/".
	APIRootPath string
	// RelativeRoots lists the API root in discovery as a path, not a URL.
	RelativeRoots bool
	// NoNext makes the objects endpoint say more=true without a next token
	// (clients must page by added_after).
	NoNext bool
	// Sessions makes the objects endpoint page the way the OASIS reference
	// server (medallion) does: the first request of a walk opens a
	// server-side session, and every page of the walk carries the same next,
	// naming it. Each request with that next returns the page after the
	// last one served, so re-sending it skips a page. A next whose session
	// is unknown or expired, or sent with another limit or added_after
	// than the walk's first request, is answered 400. A walk with nothing
	// to send is answered {} without more.
	Sessions bool
	// SessionTimeout is how long a session lives after its last request;
	// 0 means medallion's 30 seconds.
	SessionTimeout time.Duration
	// Now, when set, is the clock sessions age by, so a test can idle a
	// session past its timeout without sleeping (a sleep against a short
	// timeout also expires sessions on a slow machine between requests).
	Now func() time.Time
	// MaxPageSize, when set, is the most objects a page holds whatever the
	// limit asked (medallion's max_page_size).
	MaxPageSize int
	// Hook, when set, sees every request first; returning true means it
	// answered and the server does nothing more.
	Hook func(w http.ResponseWriter, r *http.Request) bool

	mu          sync.Mutex
	collections []Collection
	objects     map[string][]object // by collection id, in date_added order unless unsorted
	unsorted    map[string]bool
	requests    []Request
	sessions    map[string]*session
	nextSession int
}

// session is one medallion-style walk.
type session struct {
	collection, limit, addedAfter string
	skip                          int
	lastUsed                      time.Time
}

// NewServer starts a server with one API root at /api1/ holding the given
// collections. Close it when done.
func NewServer(collections ...Collection) *Server {
	s := &Server{APIRootPath: "/api1/", collections: collections,
		objects: make(map[string][]object), unsorted: make(map[string]bool), sessions: make(map[string]*session)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// CollectionURL returns the collection URL of id on this server.
func (s *Server) CollectionURL(id string) string {
	return s.URL + s.APIRootPath + "collections/" + id + "/"
}

// Add stores a STIX object in a collection with the given date_added.
// Objects are kept in date_added order.
func (s *Server) Add(collectionID string, added time.Time, obj any) {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("taxiitest: unable to marshal object: %v", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.objects[collectionID]
	// Sort lazily, on the next read: adding n objects stays O(n log n).
	if n := len(list); n > 0 && added.Before(list[n-1].added) {
		s.unsorted[collectionID] = true
	}
	s.objects[collectionID] = append(list, object{added: added.UTC(), json: b})
}

// Requests returns the objects requests seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// ExpireSessions ends every open session, as the server's timeout would:
// the next request with their next is answered 400.
func (s *Server) ExpireSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.sessions)
}

// Indicator returns a STIX 2.1 indicator object for an IPv4 address that
// is unique for n.
func Indicator(n int) map[string]any {
	return map[string]any{
		"type":         "indicator",
		"spec_version": "2.1",
		"id":           fmt.Sprintf("indicator--00000000-0000-4000-8000-%012d", n),
		"created":      "2026-01-01T00:00:00.000Z",
		"modified":     "2026-01-01T00:00:00.000Z",
		"pattern":      fmt.Sprintf("[ipv4-addr:value = '%s']", IPv4(n)),
		"pattern_type": "stix",
		"valid_from":   "2026-01-01T00:00:00Z",
	}
}

// IPv4 returns the address Indicator(n) carries: 11.x.y.z (outside the reserved ranges of the allowlist).
func IPv4(n int) string {
	return fmt.Sprintf("11.%d.%d.%d", (n>>16)&0xff, (n>>8)&0xff, n&0xff)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.Hook != nil && s.Hook(w, r) {
		return
	}
	if s.Username != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != s.Username || p != s.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="taxii"`)
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
	}
	if !acceptsTAXII21(r.Header.Get("Accept")) {
		writeError(w, http.StatusNotAcceptable, "Not Acceptable")
		return
	}
	path := r.URL.Path
	switch {
	case path == "/taxii2/":
		root := s.URL + s.APIRootPath
		if s.RelativeRoots {
			root = s.APIRootPath
		}
		writeJSON(w, map[string]any{"title": "taxiitest", "default": root, "api_roots": []string{root}})
	case path == s.APIRootPath:
		writeJSON(w, map[string]any{"title": "API root", "versions": []string{MediaType}, "max_content_length": 10 << 20})
	case path == s.APIRootPath+"collections/":
		s.mu.Lock()
		cols := make([]map[string]any, 0, len(s.collections))
		for _, c := range s.collections {
			cols = append(cols, collectionJSON(c))
		}
		s.mu.Unlock()
		writeJSON(w, map[string]any{"collections": cols})
	case strings.HasPrefix(path, s.APIRootPath+"collections/"):
		rest := strings.TrimPrefix(path, s.APIRootPath+"collections/")
		id, sub, _ := strings.Cut(rest, "/")
		c, ok := s.collection(id)
		switch {
		case !ok:
			writeError(w, http.StatusNotFound, "Collection not found")
		case sub == "":
			writeJSON(w, collectionJSON(c))
		case sub == "objects/" && !c.CanRead:
			writeError(w, http.StatusForbidden, "Collection not readable")
		case sub == "objects/":
			s.objectsPage(w, r, id)
		default:
			writeError(w, http.StatusNotFound, "Not found")
		}
	default:
		writeError(w, http.StatusNotFound, "Not found")
	}
}

func (s *Server) collection(id string) (Collection, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.collections {
		if c.ID == id {
			return c, true
		}
	}
	return Collection{}, false
}

func collectionJSON(c Collection) map[string]any {
	m := map[string]any{"id": c.ID, "title": c.Title, "can_read": c.CanRead, "can_write": false,
		"media_types": []string{"application/stix+json;version=2.1"}}
	if c.Alias != "" {
		m["alias"] = c.Alias
	}
	return m
}

// objectsPage answers one page: objects added after added_after, from the
// offset in next, at most limit of them.
func (s *Server) objectsPage(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	s.mu.Lock()
	s.requests = append(s.requests, Request{Path: r.URL.Path, AddedAfter: q.Get("added_after"),
		Next: q.Get("next"), Limit: q.Get("limit"), Accept: r.Header.Get("Accept")})
	reqIndex := len(s.requests) - 1
	if s.unsorted[id] {
		// Sort a copy: a request in flight may still read the old slice.
		sorted := slices.Clone(s.objects[id])
		slices.SortStableFunc(sorted, func(a, b object) int { return a.added.Compare(b.added) })
		s.objects[id] = sorted
		delete(s.unsorted, id)
	}
	all := s.objects[id]
	s.mu.Unlock()

	var after time.Time
	if v := q.Get("added_after"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "Bad added_after")
			return
		}
		after = t
	}
	start, _ := slices.BinarySearchFunc(all, after, func(o object, t time.Time) int {
		if !o.added.After(t) {
			return -1
		}
		return 1
	})
	matching := all[start:]
	limit := len(matching)
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "Bad limit")
			return
		}
		limit = n
	}
	if s.MaxPageSize > 0 {
		limit = min(limit, s.MaxPageSize)
	}
	var (
		page []object
		more bool
		next string
	)
	if s.Sessions {
		var status int
		if page, next, status = s.sessionPage(id, q, matching, limit); status != 0 {
			s.mu.Lock()
			s.requests[reqIndex].Refused = true
			s.mu.Unlock()
			writeError(w, status, "The server did not understand the request or filter parameters: 'next' not valid")
			return
		}
		more = next != ""
	} else {
		offset := 0
		if v := q.Get("next"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > len(matching) {
				writeError(w, http.StatusBadRequest, "Bad next")
				return
			}
			offset = n
		}
		end := min(offset+limit, len(matching))
		page = matching[offset:end]
		more = end < len(matching)
		if more && !s.NoNext {
			next = strconv.Itoa(end)
		}
	}

	w.Header().Set("Content-Type", MediaType)
	if len(page) > 0 {
		w.Header().Set("X-TAXII-Date-Added-First", page[0].added.Format(TimeLayout))
		w.Header().Set("X-TAXII-Date-Added-Last", page[len(page)-1].added.Format(TimeLayout))
	}
	if s.Sessions && len(page) == 0 {
		// medallion sends an empty resource, not an empty envelope.
		_, _ = w.Write([]byte("{}"))
		return
	}
	var b strings.Builder
	b.WriteString(`{"more":`)
	b.WriteString(strconv.FormatBool(more))
	if next != "" {
		b.WriteString(`,"next":"` + next + `"`)
	}
	b.WriteString(`,"objects":[`)
	for i, o := range page {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(o.json)
	}
	b.WriteString("]}")
	_, _ = w.Write([]byte(b.String()))
}

// sessionPage serves one page of a medallion-style walk: it opens a
// session when q has no next, and otherwise serves the page after the last
// one served under q's next. It returns the session's token while more
// remains, or a status to refuse the request with.
func (s *Server) sessionPage(id string, q url.Values, matching []object, limit int) ([]object, string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	timeout := s.SessionTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	for token, ss := range s.sessions {
		if now.Sub(ss.lastUsed) > timeout {
			delete(s.sessions, token)
		}
	}
	token := q.Get("next")
	var ss *session
	if token == "" {
		s.nextSession++
		token = fmt.Sprintf("%08x-0000-4000-8000-%012x", s.nextSession, s.nextSession)
		ss = &session{collection: id, limit: q.Get("limit"), addedAfter: q.Get("added_after")}
		s.sessions[token] = ss
	} else {
		ss = s.sessions[token]
		if ss == nil || ss.collection != id || ss.limit != q.Get("limit") || ss.addedAfter != q.Get("added_after") {
			return nil, "", http.StatusBadRequest
		}
	}
	ss.lastUsed = now
	start := min(ss.skip, len(matching))
	page := matching[start:min(start+limit, len(matching))]
	if ss.skip += limit; ss.skip >= len(matching) {
		delete(s.sessions, token)
		token = ""
	}
	return page, token, 0
}

func acceptsTAXII21(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		if strings.ReplaceAll(strings.TrimSpace(part), " ", "") == MediaType {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", MediaType)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, title string) {
	w.Header().Set("Content-Type", MediaType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"title": title, "http_status": strconv.Itoa(status)})
}
