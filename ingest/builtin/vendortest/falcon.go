package vendortest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Falcon answers like CrowdStrike Falcon Intelligence (host
// api.crowdstrike.com):
//   - POST /oauth2/token with the form client_id and client_secret answers
//     201 Created with access_token and expires_in, 403 for other
//     credentials;
//   - GET /intel/combined/indicators/v1 with `Authorization: Bearer
//     <token>` (401 for an unknown or expired token) lists the indicators
//     whose _marker is at or after the filter's _marker:>='X', sorted by
//     _marker, limit per page;
//   - every answer carries X-Ratelimit-Limit and X-Ratelimit-Remaining;
//     once the budget of RateBudget GETs is spent, Remaining is 0 with
//     X-Ratelimit-Retryafter (Unix seconds) RateWindow ahead, and a GET
//     before then answers 429 with Retry-After.
type Falcon struct {
	ClientID, Secret string
	// Indicators are raw JSON indicators; each needs a _marker.
	Indicators [][]byte
	// PageSize, when set, caps the indicators of a page whatever limit asks.
	PageSize int
	// TokenTTL is the expires_in of a token, in seconds; 0: 1799.
	TokenTTL int
	// Now is the clock of token lifetimes and rate windows; nil: time.Now.
	Now func() time.Time
	// RateBudget, when set, is how many GETs a rate window allows;
	// RateWindow its length (0: one minute).
	RateBudget int
	RateWindow time.Duration

	// FailStatus, when set, is answered to the next FailTimes GETs (to
	// every GET when FailTimes is 0), with RetryAfter as Retry-After when
	// set. TokenFailStatus does the same for every token request.
	FailStatus      int
	FailTimes       int
	RetryAfter      string
	TokenFailStatus int
	// CutPage, when set, cuts the body of that GET (1-based, counted as
	// Gets counts) half-way.
	CutPage int

	// Generated, when positive, replaces Indicators with that many
	// indicators made as they are served: Generate(n) is the n-th
	// (FalconIndicator, say), its _marker growing with n. CutPage does not
	// apply to them.
	Generated int
	Generate  func(n int) []byte

	mu        sync.Mutex
	tokens    map[string]time.Time
	issued    int
	gets      int
	failed    int
	throttled int
	spent     int
	resetAt   time.Time
}

// Issued is how many tokens were handed out.
func (f *Falcon) Issued() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.issued
}

// Throttled is how many GETs were answered 429 for a spent rate budget.
func (f *Falcon) Throttled() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.throttled
}

// Gets is how many GETs got past the token check: CutPage counts them.
func (f *Falcon) Gets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets
}

// ExpireTokens ends every token handed out so far: the next call with one
// answers 401, as a token that expired before its time.
func (f *Falcon) ExpireTokens() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.tokens)
}

func (f *Falcon) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *Falcon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/oauth2/token" && r.Method == http.MethodPost:
		f.token(w, r)
	case r.URL.Path == "/intel/combined/indicators/v1" && r.Method == http.MethodGet:
		f.indicators(w, r)
	default:
		http.NotFound(w, r)
	}
}

func falconErrors(w http.ResponseWriter, code int, msg string) {
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]any{"meta": map[string]any{"query_time": 0.001, "trace_id": "t"},
		"errors": []map[string]any{{"code": code, "message": msg}}})
	w.Write(b)
}

func (f *Falcon) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		falconErrors(w, http.StatusBadRequest, "bad form")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.TokenFailStatus != 0 {
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		falconErrors(w, f.TokenFailStatus, http.StatusText(f.TokenFailStatus))
		return
	}
	if f.ClientID == "" || r.PostForm.Get("client_id") != f.ClientID || r.PostForm.Get("client_secret") != f.Secret {
		falconErrors(w, http.StatusForbidden, "access denied, authorization failed")
		return
	}
	ttl := f.TokenTTL
	if ttl == 0 {
		ttl = 1799
	}
	f.issued++
	tok := fmt.Sprintf("falcon-token-%d", f.issued)
	if f.tokens == nil {
		f.tokens = map[string]time.Time{}
	}
	f.tokens[tok] = f.now().Add(time.Duration(ttl) * time.Second)
	w.WriteHeader(http.StatusCreated)
	b, _ := json.Marshal(map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": ttl})
	w.Write(b)
}

// markerFilter is the one filter the simulator reads.
var markerFilter = regexp.MustCompile(`^_marker:>='([^']*)'$`)

func (f *Falcon) indicators(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	now := f.now()
	tok := r.Header.Get("Authorization")
	exp, ok := f.tokens[strings.TrimPrefix(tok, "Bearer ")]
	if !ok || !now.Before(exp) {
		f.mu.Unlock()
		falconErrors(w, http.StatusUnauthorized, "access denied, invalid bearer token")
		return
	}
	// The rate budget, as the headers show it.
	window := f.RateWindow
	if window == 0 {
		window = time.Minute
	}
	if f.RateBudget > 0 {
		if !f.resetAt.IsZero() && !now.Before(f.resetAt) {
			f.spent, f.resetAt = 0, time.Time{}
		}
		if f.spent >= f.RateBudget {
			f.throttled++
			wait := int(f.resetAt.Sub(now).Seconds() + 0.999)
			f.mu.Unlock()
			w.Header().Set("Retry-After", strconv.Itoa(wait))
			w.Header().Set("X-Ratelimit-Retryafter", strconv.FormatInt(f.resetAt.Unix(), 10))
			w.Header().Set("X-Ratelimit-Remaining", "0")
			falconErrors(w, http.StatusTooManyRequests, "API rate limit exceeded.")
			return
		}
		f.spent++
		w.Header().Set("X-Ratelimit-Limit", strconv.Itoa(f.RateBudget))
		w.Header().Set("X-Ratelimit-Remaining", strconv.Itoa(f.RateBudget-f.spent))
		if f.spent == f.RateBudget {
			f.resetAt = now.Add(window)
			w.Header().Set("X-Ratelimit-Retryafter", strconv.FormatInt(f.resetAt.Unix(), 10))
		}
	} else {
		w.Header().Set("X-Ratelimit-Limit", "6000")
		w.Header().Set("X-Ratelimit-Remaining", "5999")
	}
	f.gets++
	get := f.gets
	fail := f.FailStatus != 0 && (f.FailTimes == 0 || f.failed < f.FailTimes)
	if fail {
		f.failed++
	}
	f.mu.Unlock()
	if fail {
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		falconErrors(w, f.FailStatus, http.StatusText(f.FailStatus))
		return
	}
	q := r.URL.Query()
	if q.Get("sort") != "_marker.asc" {
		falconErrors(w, http.StatusBadRequest, "vendortest: sort=_marker.asc expected")
		return
	}
	var from string
	if fl := q.Get("filter"); fl != "" {
		m := markerFilter.FindStringSubmatch(fl)
		if m == nil {
			falconErrors(w, http.StatusBadRequest, "vendortest: unknown filter "+fl)
			return
		}
		from = m[1]
	}
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = 100
	}
	if f.PageSize > 0 {
		limit = min(limit, f.PageSize)
	}
	if f.Generated > 0 {
		f.serveGenerated(w, from, limit)
		return
	}
	type entry struct {
		raw    json.RawMessage
		marker string
	}
	var all []entry
	for _, in := range f.Indicators {
		var head struct {
			Marker string `json:"_marker"`
		}
		if err := json.Unmarshal(in, &head); err != nil || head.Marker == "" {
			panic(fmt.Sprintf("vendortest: Falcon indicator without a _marker: %s", in))
		}
		if head.Marker >= from {
			all = append(all, entry{in, head.Marker})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].marker < all[j].marker })
	page := all[:min(limit, len(all))]
	resources := []json.RawMessage{}
	for _, e := range page {
		resources = append(resources, e.raw)
	}
	body, _ := json.Marshal(map[string]any{
		"meta": map[string]any{"query_time": 0.01, "powered_by": "vendortest", "trace_id": "t",
			"pagination": map[string]any{"offset": 0, "limit": limit, "total": len(all)}},
		"resources": resources, "errors": []any{},
	})
	if f.CutPage == get {
		otxCut(w, body)
		return
	}
	w.Write(body)
}
