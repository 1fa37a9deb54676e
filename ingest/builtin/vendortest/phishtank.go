package vendortest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FileFaults are the failures a simulated vendor answers with on demand. The
// zero value fails nothing.
type FileFaults struct {
	// Status, when not zero, is the answer to the first StatusTimes
	// requests (every request when StatusTimes is 0), with RetryAfter as
	// its Retry-After header when set. 509 comes with PhishTank's quota
	// headers.
	Status      int
	StatusTimes int
	RetryAfter  string
	// CutAt, when above 0, cuts the body after that many bytes: the
	// Content-Length promises the whole body, and the connection closes.
	CutAt int

	mu       sync.Mutex
	requests int
}

// Requests returns how many requests reached the handler.
func (f *FileFaults) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// fail answers the request with the configured failure, if it is one to
// fail, and says whether it did.
func (f *FileFaults) fail(w http.ResponseWriter) bool {
	f.mu.Lock()
	f.requests++
	n := f.requests
	f.mu.Unlock()
	if f.Status == 0 || f.StatusTimes > 0 && n > f.StatusTimes {
		return false
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.Status == 509 {
		w.Header().Set("X-Request-Limit-Interval", "259200 Seconds")
		w.Header().Set("X-Request-Limit", "75")
		w.Header().Set("X-Request-Count", "76")
	}
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(f.Status)
	fmt.Fprintf(w, "<html><body>%d</body></html>\n", f.Status)
	return true
}

// serveCannedFile answers with body under the validators given, honouring
// If-None-Match and If-Modified-Since, and cutting the body at cutAt.
func serveCannedFile(w http.ResponseWriter, r *http.Request, body []byte, contentType, etag string, lastModified time.Time, cutAt int) {
	h := w.Header()
	if etag != "" {
		h.Set("ETag", etag)
	}
	if !lastModified.IsZero() {
		h.Set("Last-Modified", lastModified.UTC().Format(http.TimeFormat))
	}
	if inm := r.Header.Get("If-None-Match"); etag != "" && inm != "" {
		if inm == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	} else if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !lastModified.IsZero() &&
		!lastModified.Truncate(time.Second).After(ims) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if cutAt > 0 && cutAt < len(body) {
		w.Write(body[:cutAt])
		// The handler returns short of the Content-Length: the server
		// closes the connection and the client reads an unexpected EOF.
		return
	}
	w.Write(body)
}

// PhishTank answers like data.phishtank.com for the online-valid database:
// GET /data/online-valid.json.gz (keyless) or
// /data/<app key>/online-valid.json.gz, gzip-compressed JSON, with ETag
// and Last-Modified, 304 to a conditional request, and 509 Bandwidth Limit
// Exceeded with its quota headers when asked (FileFaults.Status = 509).
type PhishTank struct {
	// JSON is the uncompressed online-valid.json (an array of records).
	JSON []byte
	// Generate, when above 0, serves that many generated records instead
	// of JSON, compressed as they are written (see WritePhishTankJSON): a
	// big database in flat memory. The body then has no Content-Length.
	Generate int
	// Key, when set, is the only app key accepted: the keyless path and
	// another key answer 403, as PhishTank's Cloudflare front does.
	Key          string
	ETag         string
	LastModified time.Time
	FileFaults
}

// ServeHTTP implements http.Handler.
func (p *PhishTank) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.fail(w) {
		return
	}
	key, ok := phishTankKey(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if p.Key != "" && key != p.Key {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	if p.Generate > 0 {
		w.Header().Set("Content-Type", "application/x-gzip")
		if p.ETag != "" {
			w.Header().Set("ETag", p.ETag)
		}
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		WritePhishTankJSON(zw, p.Generate)
		zw.Close()
		return
	}
	serveCannedFile(w, r, gzipPhishTank(p.JSON), "application/x-gzip", p.ETag, p.LastModified, p.CutAt)
}

// phishTankKey reads the app key of /data/[<key>/]online-valid.json.gz.
func phishTankKey(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/data/")
	if !ok {
		return "", false
	}
	if rest == "online-valid.json.gz" {
		return "", true
	}
	key, file, ok := strings.Cut(rest, "/")
	return key, ok && key != "" && file == "online-valid.json.gz"
}

func gzipPhishTank(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

var phishTankBrands = []string{"Amazon.com", "PayPal", "Microsoft", "AEON Card", "Other", "Allegro"}

// WritePhishTankJSON writes an online-valid.json of n records in
// PhishTank's layout (about 480 bytes each: 110,000 records make 50 MB),
// with documentation addresses and example.com URLs, record i's URL being
// https://login-<i>.example.com/account/verify.php?session=<i>.
func WritePhishTankJSON(w io.Writer, n int) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("[")
	for i := range n {
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, `{"phish_id":"%d","url":"https:\/\/login-%d.example.com\/account\/verify.php?session=%d",`+
			`"phish_detail_url":"http:\/\/www.phishtank.com\/phish_detail.php?phish_id=%d",`+
			`"submission_time":"2026-11-02T10:%02d:%02d+00:00","verified":"yes","verification_time":"2026-11-02T11:%02d:%02d+00:00","online":"yes",`+
			`"details":[{"ip_address":"192.0.2.%d","cidr_block":"192.0.2.0\/24","announcing_network":"64500","rir":"arin","country":"US","detail_time":"2026-11-02T11:05:00+00:00"}],`+
			`"target":"%s"}`,
			8000000+i, i, i, 8000000+i, i/60%60, i%60, i/60%60, i%60, i%254+1, phishTankBrands[i%len(phishTankBrands)])
		if bw.Buffered() > 48<<10 {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
	bw.WriteString("]\n")
	return bw.Flush()
}
