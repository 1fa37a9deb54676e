package vendortest

import (
	"io"
	"net/http"
	"strings"
	"sync"
)

// GTIHost is Google Threat Intelligence's (VirusTotal's) API host.
const GTIHost = "www.virustotal.com"

// GTI answers like GET /api/v3/threat_lists/<list>/<YYYYMMDDHH>: the
// x-apikey header checked (401 otherwise), the package body set for a list
// and hour, 404 for an hour with none, and failures on demand per list.
// Safe for concurrent use.
type GTI struct {
	// Generate, when set, gives the body of a package that SetPackage did
	// not set (GTIPackage, say), or nil for an hour with none.
	Generate func(list, hour string) io.WriterTo

	mu       sync.Mutex
	key      string
	packages map[string]string // "<list>/<hour>" -> body
	status   map[string]int
	retry    string
	cut      map[string]bool
	asked    map[string]int
}

// NewGTI returns a simulator accepting key.
func NewGTI(key string) *GTI {
	return &GTI{key: key, packages: map[string]string{}, status: map[string]int{}, cut: map[string]bool{}, asked: map[string]int{}}
}

// SetPackage sets the body of list's package for hour (YYYYMMDDHH).
func (g *GTI) SetPackage(list, hour, body string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.packages[list+"/"+hour] = body
}

// Fail makes every request for list answer status (0: serve again).
func (g *GTI) Fail(list string, status int, retryAfter string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.status[list], g.retry = status, retryAfter
}

// SetCut makes list's packages stop half-way, the connection closed.
func (g *GTI) SetCut(list string, cut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut[list] = cut
}

// Asked returns how many requests "<list>/<hour>" got.
func (g *GTI) Asked(list, hour string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.asked[list+"/"+hour]
}

func (g *GTI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	key, ok := strings.CutPrefix(r.URL.Path, "/api/v3/threat_lists/")
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	g.asked[key]++
	if r.Header.Get("X-Apikey") != g.key || g.key == "" {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"code":"WrongCredentialsError","message":"Wrong API key"}}`))
		return
	}
	list, _, _ := strings.Cut(key, "/")
	if st := g.status[list]; st != 0 {
		if g.retry != "" {
			w.Header().Set("Retry-After", g.retry)
		}
		w.WriteHeader(st)
		w.Write([]byte(`{"error":{"code":"QuotaExceededError"}}`))
		return
	}
	body, found := g.packages[key]
	if !found && g.Generate != nil {
		_, hour, _ := strings.Cut(key, "/")
		if wt := g.Generate(list, hour); wt != nil {
			w.Header().Set("Content-Type", "application/json")
			wt.WriteTo(w)
			return
		}
	}
	if !found {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"code":"NotFoundError"}}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if g.cut[list] {
		w.Write([]byte(body[:len(body)/2]))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	w.Write([]byte(body))
}
