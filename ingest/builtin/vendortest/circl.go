package vendortest

import (
	"net/http"
	"strings"
	"sync"
)

// CIRCL answers like CIRCL's OSINT MISP feed (host www.circl.lu): GET
// /doc/misp/feed-osint/manifest.json is Manifest, GET
// /doc/misp/feed-osint/<uuid>.json is Events[uuid] (404 when absent).
// A nil Manifest is a 404. The feed needs no key.
type CIRCL struct {
	Manifest []byte
	Events   map[string][]byte

	// FailStatus, when set, is answered to the next FailTimes requests (to
	// every request when FailTimes is 0), with RetryAfter as Retry-After
	// when set.
	FailStatus int
	FailTimes  int
	RetryAfter string
	// CutEvent, when set, names the event whose body is cut half-way.
	CutEvent string

	mu     sync.Mutex
	failed int
}

func (c *CIRCL) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/doc/misp/feed-osint/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if otxFail(&c.mu, &c.failed, c.FailStatus, c.FailTimes, c.RetryAfter, w) {
		return
	}
	var body []byte
	if name == "manifest.json" {
		body = c.Manifest
		if body == nil {
			http.NotFound(w, r)
			return
		}
	} else if uuid, ok := strings.CutSuffix(name, ".json"); ok {
		body, ok = c.Events[uuid]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if uuid == c.CutEvent {
			w.Header().Set("Content-Type", "application/json")
			otxCut(w, body)
			return
		}
	} else {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}
