package vendortest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ETOpenHost is the host of the ET Open rule set.
const ETOpenHost = "rules.emergingthreats.net"

// ETOpen answers like rules.emergingthreats.net for the Suricata rule set:
// GET /open/suricata-<version>/emerging.rules.tar.gz and its .md5 (the
// hex sum, a space and the file name, as ET publishes it). Serve it with
// srv.Handle(ETOpenHost, h).
type ETOpen struct {
	mu sync.Mutex
	// Archive is the tar.gz served (see TarGz).
	Archive []byte
	// MD5 is the sum the .md5 answers; "" is the archive's own.
	MD5 string
	// Status, when non-zero, answers every request with it (401, 404,
	// 5xx ...), with RetryAfter when set.
	Status     int
	RetryAfter string
	// StatusTimes, when non-zero, limits Status to that many answers;
	// the requests after them are served normally.
	StatusTimes int
	// Cut sends half the archive under the full Content-Length, then
	// closes the connection.
	Cut bool

	archiveGets, checksumGets int
}

// Set changes the handler under its lock, for a test that updates the
// rule set between two runs.
func (h *ETOpen) Set(fn func(h *ETOpen)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fn(h)
}

// Gets returns how many times the archive and the checksum were served.
func (h *ETOpen) Gets() (archive, checksum int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.archiveGets, h.checksumGets
}

func (h *ETOpen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if h.Status != 0 {
		if h.StatusTimes > 0 {
			h.StatusTimes--
			if h.StatusTimes == 0 {
				defer func() { h.Status = 0 }()
			}
		}
		if h.RetryAfter != "" {
			w.Header().Set("Retry-After", h.RetryAfter)
		}
		http.Error(w, http.StatusText(h.Status), h.Status)
		return
	}
	dir, file, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/open/"), "/")
	if !ok || !strings.HasPrefix(dir, "suricata-") {
		http.NotFound(w, r)
		return
	}
	switch file {
	case "emerging.rules.tar.gz.md5":
		h.checksumGets++
		sum := h.MD5
		if sum == "" {
			s := md5.Sum(h.Archive)
			sum = hex.EncodeToString(s[:])
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(sum + "  emerging.rules.tar.gz\n"))
	case "emerging.rules.tar.gz":
		h.archiveGets++
		w.Header().Set("Content-Type", "application/x-gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(h.Archive)))
		if h.Cut {
			w.Write(h.Archive[:len(h.Archive)/2])
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			panic(http.ErrAbortHandler) // closes the connection mid-body
		}
		w.Write(h.Archive)
	default:
		http.NotFound(w, r)
	}
}

// TarGz builds a tar.gz holding files (name → content), in name order, as
// ET's archive holds rules/<name>.rules.
func TarGz(files map[string]string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			panic(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			panic(err)
		}
	}
	if err := tw.Close(); err != nil {
		panic(err)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
