package egress_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ioc"
)

// TestFailureClasses drives each way a fetch fails through the egress
// client and checks the status message ioc.HTTPRequestFailure gives it:
// no connection made is Failed to connect to feed source, a connection
// made that then failed is Connection Error.
func TestFailureClasses(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cut":
			// Promise 1000 bytes, send 10, hang up.
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("0123456789"))
			w.(http.Flusher).Flush()
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		case "/reset":
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		case "/stall-headers":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/stall-body":
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("first line\n"))
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + closed.Addr().String() + "/"
	closed.Close()

	allow := egress.Options{AllowPrivate: true, ConnectTimeout: 5 * time.Second}
	for name, tc := range map[string]struct {
		url      string
		opts     *egress.Options
		readBody bool
		want     ioc.FailureKind
	}{
		"refused port":      {url: refusedURL, want: ioc.FailedToConnect},
		"unresolvable host": {url: "http://x.invalid/", want: ioc.FailedToConnect},
		"connect timeout": {url: plain.URL, want: ioc.FailedToConnect,
			opts: &egress.Options{AllowPrivate: true, ConnectTimeout: time.Nanosecond}},
		"TLS to plain HTTP":  {url: strings.Replace(plain.URL, "http:", "https:", 1), want: ioc.ConnectionError},
		"untrusted cert":     {url: tlsSrv.URL, want: ioc.ConnectionError},
		"reset":              {url: plain.URL + "/reset", want: ioc.ConnectionError},
		"stalled answer":     {url: plain.URL + "/stall-headers", want: ioc.ConnectionError},
		"cut mid-body":       {url: plain.URL + "/cut", readBody: true, want: ioc.ConnectionError},
		"stalled mid-body":   {url: plain.URL + "/stall-body", readBody: true, want: ioc.ConnectionError},
		"refused by policy":  {url: plain.URL, opts: &egress.Options{}, want: ioc.InvalidURL},
		"user info in URL":   {url: strings.Replace(plain.URL, "//", "//u:p@", 1), want: ioc.InvalidURL},
		"ftp is not fetched": {url: "ftp://127.0.0.1/", want: ioc.InvalidURL},
	} {
		t.Run(name, func(t *testing.T) {
			opts := allow
			if tc.opts != nil {
				opts = *tc.opts
			}
			client := egress.NewClient(opts)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tc.url, nil)
			resp, err := client.Do(req)
			if err == nil {
				defer resp.Body.Close()
				if !tc.readBody {
					t.Fatalf("got %s, want an error", resp.Status)
				}
				_, err = io.ReadAll(resp.Body)
				if err == nil {
					t.Fatal("the body read without error")
				}
			}
			fe := ioc.HTTPRequestFailure("test", err)
			if k := ioc.FailureOf(fe); k != tc.want {
				t.Fatalf("kind %q, want %q: %v", k, tc.want, fe)
			}
			t.Log(fe)
		})
	}
}

// TestStatusFailureQuotesNoBody: the detail of an error answer quotes its
// status line, clipped, never its body.
func TestStatusFailureQuotesNoBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte("internal page: db password hunter2"))
	}))
	defer srv.Close()
	resp, err := egress.NewClient(egress.Options{AllowPrivate: true}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	fe := ioc.HTTPStatusFailure("test", resp)
	if k := ioc.FailureOf(fe); k != ioc.FetchingDataError {
		t.Fatalf("kind %q", k)
	}
	if strings.Contains(fe.Error(), "hunter2") || !strings.Contains(fe.Error(), "500 Internal Server Error") {
		t.Fatalf("detail %q", fe)
	}
	long := &http.Response{StatusCode: 500, Status: "500 " + strings.Repeat("x", 500) + "\x1b[31m"}
	if s := ioc.StatusLine(long); len(s) > 100 || strings.ContainsRune(s, '\x1b') {
		t.Fatalf("status line not clipped: %q", s)
	}
}
