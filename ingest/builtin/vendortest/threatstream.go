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

// ThreatStream answers like Anomali ThreatStream's GET
// /api/v2/intelligence/ (host api.threatstream.com): the header
// `Authorization: apikey <Username>:<Key>` is checked (401 otherwise),
// objects are filtered by update_id__gt and modified_ts__gt, ordered by
// update_id, limit per page with offset paging, and meta.next is a
// relative link (/api/v2/intelligence/?...&offset=N), or an absolute one
// on the vendor's host with AbsoluteNext.
type ThreatStream struct {
	Username, Key string
	// Objects are raw JSON intelligence objects; each needs an update_id
	// (a number) and a modified_ts (RFC 3339).
	Objects [][]byte
	// PageSize, when set, caps the objects of a page whatever limit asks.
	PageSize     int
	AbsoluteNext bool

	// FailStatus, when set, is answered to the next FailTimes requests (to
	// every request when FailTimes is 0), with RetryAfter as Retry-After
	// when set.
	FailStatus int
	FailTimes  int
	RetryAfter string
	// CutPage, when set, cuts the body of that page (1-based, counted from
	// the request's offset) half-way, after promising its full length.
	CutPage int

	// Generated, when positive, replaces Objects with that many objects
	// made as they are served: Generate(n) is the object of update_id n+1
	// (ThreatStreamObject, say), modified after any modified_ts__gt a
	// client asks. CutPage does not apply to them.
	Generated int
	Generate  func(n int) []byte

	mu     sync.Mutex
	failed int
}

func (ts *ThreatStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v2/intelligence/" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if ts.Key == "" || r.Header.Get("Authorization") != "apikey "+ts.Username+":"+ts.Key {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"message": "Unauthorized"}`)
		return
	}
	if otxFail(&ts.mu, &ts.failed, ts.FailStatus, ts.FailTimes, ts.RetryAfter, w) {
		return
	}
	q := r.URL.Query()
	if q.Get("order_by") != "update_id" {
		http.Error(w, `{"message": "vendortest: order_by=update_id expected"}`, http.StatusBadRequest)
		return
	}
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = 20
	}
	if ts.PageSize > 0 {
		limit = min(limit, ts.PageSize)
	}
	offset, _ := strconv.Atoi(q.Get("offset"))
	var gt int64 = -1
	if s := q.Get("update_id__gt"); s != "" {
		if gt, err = strconv.ParseInt(s, 10, 64); err != nil {
			http.Error(w, `{"message": "bad update_id__gt"}`, http.StatusBadRequest)
			return
		}
	}
	var after time.Time
	if s := q.Get("modified_ts__gt"); s != "" {
		if after, err = time.Parse(time.RFC3339Nano, s); err != nil {
			http.Error(w, `{"message": "bad modified_ts__gt"}`, http.StatusBadRequest)
			return
		}
	}
	if ts.Generated > 0 {
		ts.serveGenerated(w, q, limit, offset, gt)
		return
	}
	type entry struct {
		raw json.RawMessage
		id  int64
	}
	var all []entry
	for _, o := range ts.Objects {
		var head struct {
			UpdateID   int64  `json:"update_id"`
			ModifiedTS string `json:"modified_ts"`
		}
		if err := json.Unmarshal(o, &head); err != nil {
			panic(fmt.Sprintf("vendortest: ThreatStream object is not JSON: %v", err))
		}
		mod, err := time.Parse(time.RFC3339Nano, head.ModifiedTS)
		if err != nil {
			panic(fmt.Sprintf("vendortest: ThreatStream modified_ts: %v", err))
		}
		if head.UpdateID > gt && (after.IsZero() || mod.After(after)) {
			all = append(all, entry{o, head.UpdateID})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].id < all[j].id })
	from := min(offset, len(all))
	to := min(from+limit, len(all))
	objects := []json.RawMessage{}
	for _, e := range all[from:to] {
		objects = append(objects, e.raw)
	}
	var next *string
	if to < len(all) {
		q.Set("offset", strconv.Itoa(to))
		n := "/api/v2/intelligence/?" + q.Encode()
		if ts.AbsoluteNext {
			n = URL("api.threatstream.com", n)
		}
		next = &n
	}
	body, _ := json.Marshal(map[string]any{
		"meta":    map[string]any{"total_count": len(all), "offset": offset, "limit": limit, "took": 3, "next": next},
		"objects": objects,
	})
	if ts.CutPage > 0 && offset/limit+1 == ts.CutPage {
		otxCut(w, body)
		return
	}
	w.Write(body)
}
