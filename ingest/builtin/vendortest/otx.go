package vendortest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"
)

// OTX answers like AlienVault OTX's GET /api/v1/pulses/subscribed (host
// otx.alienvault.com): the X-OTX-API-KEY header is checked (403 when it is
// not Key), pulses modified at or after modified_since are listed newest
// first, limit per page, with absolute next links on the vendor's host.
type OTX struct {
	Key string
	// Pulses are the raw JSON pulses the account subscribes to; each needs
	// a "modified" in OTX's format (2023-08-22T09:43:18.855000, UTC).
	Pulses [][]byte

	// FailStatus, when set, is answered to the next FailTimes requests (to
	// every request when FailTimes is 0), with RetryAfter as Retry-After
	// when set.
	FailStatus int
	FailTimes  int
	RetryAfter string
	// CutPage, when set, cuts the body of that page (1-based) half-way,
	// after promising its full length.
	CutPage int
	// PageSize, when set, caps the pulses of a page whatever limit asks,
	// as a server may.
	PageSize int

	mu     sync.Mutex
	failed int
}

func (o *OTX) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/pulses/subscribed" {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("X-OTX-API-KEY") != o.Key || o.Key == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"detail": "Authentication credentials were not provided."}`)
		return
	}
	if otxFail(&o.mu, &o.failed, o.FailStatus, o.FailTimes, o.RetryAfter, w) {
		return
	}
	q := r.URL.Query()
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = 10
	}
	if o.PageSize > 0 {
		limit = min(limit, o.PageSize)
	}
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page <= 0 {
		page = 1
	}
	var since time.Time
	if s := q.Get("modified_since"); s != "" {
		if since, err = otxTime(s); err != nil {
			http.Error(w, `{"detail": "bad modified_since"}`, http.StatusBadRequest)
			return
		}
	}
	type entry struct {
		raw json.RawMessage
		mod time.Time
	}
	var all []entry
	for _, p := range o.Pulses {
		var head struct {
			Modified string `json:"modified"`
		}
		if err := json.Unmarshal(p, &head); err != nil {
			panic(fmt.Sprintf("vendortest: OTX pulse is not JSON: %v", err))
		}
		mod, err := otxTime(head.Modified)
		if err != nil {
			panic(fmt.Sprintf("vendortest: OTX pulse modified: %v", err))
		}
		if !mod.Before(since) {
			all = append(all, entry{p, mod})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].mod.After(all[j].mod) })
	from := min((page-1)*limit, len(all))
	to := min(from+limit, len(all))
	results := []json.RawMessage{}
	for _, e := range all[from:to] {
		results = append(results, e.raw)
	}
	var next *string
	if to < len(all) {
		q.Set("page", strconv.Itoa(page+1))
		n := URL("otx.alienvault.com", "/api/v1/pulses/subscribed") + "?" + q.Encode()
		next = &n
	}
	var prev *string
	if page > 1 {
		q.Set("page", strconv.Itoa(page-1))
		p := URL("otx.alienvault.com", "/api/v1/pulses/subscribed") + "?" + q.Encode()
		prev = &p
	}
	body, _ := json.Marshal(map[string]any{
		"results": results, "count": len(all), "next": next, "previous": prev,
		"prefetch_pulse_ids": false, "t": 0, "t2": 0.01, "t3": 0.02,
	})
	w.Header().Set("Content-Type", "application/json")
	if o.CutPage == page {
		otxCut(w, body)
		return
	}
	w.Write(body)
}

func otxTime(s string) (time.Time, error) {
	for _, l := range []string{"2006-01-02T15:04:05.999999999", time.RFC3339Nano} {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("vendortest: %q is not an OTX time", s)
}

// otxFail, shared by the OTX, CIRCL and ET reputation handlers, answers
// status (with Retry-After) when a handler is set to fail and has failed
// fewer than times requests (times 0: always).
func otxFail(mu *sync.Mutex, failed *int, status, times int, retryAfter string, w http.ResponseWriter) bool {
	if status == 0 {
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	if times > 0 && *failed >= times {
		return false
	}
	*failed++
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	http.Error(w, http.StatusText(status), status)
	return true
}

// otxCut, shared by the OTX, CIRCL and ET reputation handlers, promises
// body's full length and sends half of it; the handler then returns and
// the server drops the connection: a body cut mid-way.
func otxCut(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body[:len(body)/2])
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
