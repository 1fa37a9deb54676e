package vendortest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// RecordedFutureHost is Recorded Future's API host.
const RecordedFutureHost = "api.recordedfuture.com"

// RecordedFuture answers like Recorded Future's entity risk lists,
// GET and HEAD /v2/{ip,domain,url,hash}/risklist?format=csv/splunk&gzip=true:
// the X-RFToken header checked (401 without the right token), each list a
// gzip CSV body with an ETag that changes when the list does, and failures
// on demand per list. Safe for concurrent use; configure it with the
// methods.
type RecordedFuture struct {
	mu     sync.Mutex
	token  string
	lists  map[string][]byte // gzip of the CSV
	etags  map[string]string
	status map[string]int
	retry  string
	cut    map[string]bool
	gets   map[string]int
	heads  map[string]int
	ver    int
}

// NewRecordedFuture returns a simulator accepting token.
func NewRecordedFuture(token string) *RecordedFuture {
	return &RecordedFuture{token: token, lists: map[string][]byte{}, etags: map[string]string{},
		status: map[string]int{}, cut: map[string]bool{}, gets: map[string]int{}, heads: map[string]int{}}
}

// SetList replaces list (ip, domain, url, hash) with the CSV text csv,
// header line included; its ETag changes.
func (rf *RecordedFuture) SetList(list, csv string) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(csv))
	zw.Close()
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.ver++
	rf.lists[list] = b.Bytes()
	rf.etags[list] = fmt.Sprintf(`"%s-%d"`, list, rf.ver)
}

// Fail makes every request for list answer status (0: serve it again),
// with Retry-After retryAfter when not empty.
func (rf *RecordedFuture) Fail(list string, status int, retryAfter string) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.status[list], rf.retry = status, retryAfter
}

// SetCut makes the GETs of list send half the body and close the
// connection.
func (rf *RecordedFuture) SetCut(list string, cut bool) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.cut[list] = cut
}

// Downloads returns how many times list was sent by GET (200).
func (rf *RecordedFuture) Downloads(list string) int {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return rf.gets[list]
}

// Heads returns how many HEAD requests list got.
func (rf *RecordedFuture) Heads(list string) int {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return rf.heads[list]
}

func (rf *RecordedFuture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	list, ok := strings.CutPrefix(r.URL.Path, "/v2/")
	list, ok2 := strings.CutSuffix(list, "/risklist")
	if !ok || !ok2 || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("X-RFToken") != rf.token || rf.token == "" {
		http.Error(w, `{"error":{"status":401,"message":"Unauthorized"}}`, http.StatusUnauthorized)
		return
	}
	if st := rf.status[list]; st != 0 {
		if rf.retry != "" {
			w.Header().Set("Retry-After", rf.retry)
		}
		http.Error(w, http.StatusText(st), st)
		return
	}
	body, found := rf.lists[list]
	if !found {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", rf.etags[list])
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		rf.heads[list]++
		return
	}
	if rf.cut[list] {
		w.Write(body[:len(body)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	rf.gets[list]++
	w.Write(body)
}
