// Package vendortest serves recorded vendor answers on loopback in the
// layout of a feed mirror (--feed-mirror): a request for
// https://openphish.com/feed.txt arrives as GET /openphish.com/feed.txt.
// Tests of built-in and premium sources register a handler per vendor host
// and fetch through MirrorClient, which rewrites every vendor URL the way
// the server's mirror does, links in answers included.
package vendortest

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Server is a loopback mirror of vendor hosts.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	hosts    map[string]http.Handler
	requests []*http.Request
}

// New starts a mirror that answers 404 for every host until one is added.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{hosts: map[string]http.Handler{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Handle serves the vendor host (e.g. "openphish.com") with h. h sees the
// request as the vendor would: URL.Host is the vendor host and URL.Path the
// vendor's path.
func (s *Server) Handle(host string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[host] = h
}

// Requests returns the requests served so far, as the vendor saw them.
func (s *Server) Requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	host, path, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	s.mu.Lock()
	h := s.hosts[host]
	vr := r.Clone(r.Context())
	vr.URL.Host, vr.Host, vr.URL.Path, vr.URL.RawPath = host, host, "/"+path, ""
	s.requests = append(s.requests, vr)
	s.mu.Unlock()
	if h == nil {
		http.Error(w, "no such vendor host: "+host, http.StatusNotFound)
		return
	}
	h.ServeHTTP(w, vr)
}

// URL returns the absolute vendor URL that a vendor's answer would carry
// (a `next` link, say) for path on host; clients rewrite it to the mirror.
func URL(host, path string) string { return "https://" + host + path }

// MirrorClient returns a client that sends every request to the mirror at
// base as <base>/<host><path>?<query>, as --feed-mirror does.
func MirrorClient(base string) *http.Client {
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	return &http.Client{Transport: mirrorTransport{base: u, next: http.DefaultTransport}}
}

type mirrorTransport struct {
	base *url.URL
	next http.RoundTripper
}

func (m mirrorTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == m.base.Host {
		return m.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	u := *m.base
	u.Path = strings.TrimSuffix(m.base.Path, "/") + "/" + r.URL.Host + r.URL.EscapedPath()
	u.RawPath = ""
	u.RawQuery = r.URL.RawQuery
	r.URL, r.Host = &u, u.Host
	return m.next.RoundTrip(r)
}
