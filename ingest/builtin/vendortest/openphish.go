package vendortest

import (
	"net/http"
	"strconv"
	"sync"
)

// OpenPhishHost is the vendor host of the OpenPhish community feed.
const OpenPhishHost = "openphish.com"

// OpenPhish answers like https://openphish.com/feed.txt: the list as plain
// text with an ETag, 304 Not Modified to a matching If-None-Match, and its
// failures on demand. Set the fields before serving, or through the
// methods while a test runs; it is safe for concurrent use.
type OpenPhish struct {
	mu sync.Mutex
	// Body is the current list, one URL per line.
	Body []byte
	// ETag of Body; when empty, one is made from Body's length and a
	// version counter that Set increments.
	ETag string
	// Status, when non-zero, is answered instead of the list (401, 429,
	// 500, ...), with RetryAfter as its Retry-After header when set.
	Status     int
	RetryAfter string
	// FailTimes, when positive, limits Status to that many answers; after
	// them the list is served again (a throttle that passes).
	FailTimes int
	// Cut sends the headers of the whole list and then only half of it,
	// then closes the connection: a body cut mid-way.
	Cut bool

	version int
	served  int // answers with the list (200)
}

// Set replaces the list, so that the next request gets it with a new ETag.
func (o *OpenPhish) Set(body string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.Body, o.ETag = []byte(body), ""
	o.version++
}

// Fail makes the next n answers status (n <= 0: every answer until
// Fail(0, 0, "")), with Retry-After retryAfter when it is not empty.
func (o *OpenPhish) Fail(status, n int, retryAfter string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.Status, o.FailTimes, o.RetryAfter = status, n, retryAfter
}

// SetCut turns the cut body on or off.
func (o *OpenPhish) SetCut(cut bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.Cut = cut
}

// Served returns how many times the list itself was sent.
func (o *OpenPhish) Served() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.served
}

func (o *OpenPhish) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if r.URL.Path != "/feed.txt" {
		http.NotFound(w, r)
		return
	}
	if o.Status != 0 {
		if o.FailTimes > 0 {
			o.FailTimes--
			if o.FailTimes == 0 {
				defer func() { o.Status = 0 }()
			}
		}
		if o.RetryAfter != "" {
			w.Header().Set("Retry-After", o.RetryAfter)
		}
		http.Error(w, http.StatusText(o.Status), o.Status)
		return
	}
	etag := o.ETag
	if etag == "" {
		etag = `"` + strconv.Itoa(o.version) + "-" + strconv.Itoa(len(o.Body)) + `"`
	}
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	o.served++
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(o.Body)))
	if o.Cut {
		w.Write(o.Body[:len(o.Body)/2])
		w.(http.Flusher).Flush()
		if h, ok := w.(http.Hijacker); ok {
			if conn, _, err := h.Hijack(); err == nil {
				conn.Close()
			}
		}
		return
	}
	w.Write(o.Body)
}
