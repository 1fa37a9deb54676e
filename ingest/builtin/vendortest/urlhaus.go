package vendortest

import (
	"net/http"
	"time"
)

// The abuse.ch downloads that the built-in feeds read, on their own hosts.
const (
	URLhausHost   = "urlhaus.abuse.ch"
	URLhausPath   = "/downloads/csv_recent/"
	SSLBLHost     = "sslbl.abuse.ch"
	SSLBLPath     = "/blacklist/sslblacklist.csv"
	ThreatFoxHost = "threatfox.abuse.ch"
	ThreatFoxPath = "/export/csv/recent/"
)

// AbuseCh answers like one abuse.ch bulk download (URLhaus csv_recent,
// SSLBL sslblacklist.csv, ThreatFox export/csv/recent): GET Path only,
// text/plain CSV, with ETag and Last-Modified when set and 304 to a
// conditional request. With AuthKey set, a request without the header
// `Auth-Key: <AuthKey>` answers 401, as abuse.ch has since June 2025.
// FileFaults gives 402 (abuse.ch's quota answer), 429, 5xx and cut bodies.
type AbuseCh struct {
	Path         string
	Body         []byte
	AuthKey      string
	ETag         string
	LastModified time.Time
	FileFaults
}

// NewURLhaus serves csv as URLhaus' csv_recent download.
func NewURLhaus(csv []byte) *AbuseCh { return &AbuseCh{Path: URLhausPath, Body: csv} }

// NewSSLBL serves csv as SSLBL's sslblacklist.csv.
func NewSSLBL(csv []byte) *AbuseCh { return &AbuseCh{Path: SSLBLPath, Body: csv} }

// ServeHTTP implements http.Handler.
func (a *AbuseCh) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.fail(w) {
		return
	}
	if r.Method != http.MethodGet || r.URL.Path != a.Path {
		http.NotFound(w, r)
		return
	}
	if a.AuthKey != "" && r.Header.Get("Auth-Key") != a.AuthKey {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"query_status":"unknown_auth_key"}` + "\n"))
		return
	}
	serveCannedFile(w, r, a.Body, "text/plain; charset=utf-8", a.ETag, a.LastModified, a.CutAt)
}
