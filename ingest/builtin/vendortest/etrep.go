package vendortest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ETReputation answers like Proofpoint's ET reputation lists: on host
// rules.emergingthreatspro.com, GET /<Code>/reputation/iprepdata.json and
// …/domainrepdata.json (403 for another code); on host
// rules.emergingthreats.net, GET /blockrules/compromised-ips.txt. Every
// list has an ETag (a hash of its content) and, when LastModified is set,
// a Last-Modified, and a conditional request for an unchanged list is
// answered 304. Register it for both hosts; paths it does not serve go to
// Other (ET Open's rules share rules.emergingthreats.net), else 404. A nil
// list is a 404.
type ETReputation struct {
	Code                          string
	IPRep, DomainRep, Compromised []byte
	LastModified                  time.Time
	Other                         http.Handler

	// FailStatus, when set, is answered to the next FailTimes list
	// requests (to every one when FailTimes is 0), with RetryAfter as
	// Retry-After when set.
	FailStatus int
	FailTimes  int
	RetryAfter string
	// CutList, when set, names the file (e.g. "domainrepdata.json") whose
	// body is cut half-way.
	CutList string

	mu     sync.Mutex
	failed int
}

func (e *ETReputation) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	var file string
	switch {
	case r.URL.Path == "/blockrules/compromised-ips.txt":
		file, body = "compromised-ips.txt", e.Compromised
	case strings.HasSuffix(r.URL.Path, "/reputation/iprepdata.json"), strings.HasSuffix(r.URL.Path, "/reputation/domainrepdata.json"):
		code, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if code != e.Code || e.Code == "" {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		file = strings.TrimPrefix(rest, "reputation/")
		if file == "iprepdata.json" {
			body = e.IPRep
		} else {
			body = e.DomainRep
		}
	default:
		if e.Other != nil {
			e.Other.ServeHTTP(w, r)
		} else {
			http.NotFound(w, r)
		}
		return
	}
	if otxFail(&e.mu, &e.failed, e.FailStatus, e.FailTimes, e.RetryAfter, w) {
		return
	}
	if body == nil {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(body)
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:8])+`"`)
	if file == e.CutList {
		otxCut(w, body)
		return
	}
	http.ServeContent(w, r, file, e.LastModified, bytes.NewReader(body))
}
