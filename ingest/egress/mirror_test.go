package egress_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ioc"
)

// TestVendorClientMirror: with a mirror, vendor URLs (next links and
// redirects included) go to <mirror>/<host><path>?<query> with their method,
// headers and body, the mirror is reachable on loopback though the policy
// refuses private addresses, and the exception does not reach the client of
// URLs that users type.
func TestVendorClientMirror(t *testing.T) {
	type seen struct{ method, path, query, header, body string }
	var got []seen
	mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, seen{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("X-OTX-API-KEY"), string(b)})
		if r.URL.Path == "/prefix/otx.alienvault.com/api/v1/pulses/subscribed" && r.URL.Query().Get("page") == "" {
			// A redirect to the vendor's own host: rewritten too.
			http.Redirect(w, r, "https://otx.alienvault.com/api/v1/pulses/subscribed?page=2", http.StatusFound)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer mirror.Close()

	c, err := egress.NewVendorClient(egress.Options{}, mirror.URL+"/prefix/")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "https://otx.alienvault.com/api/v1/pulses/subscribed?limit=50&modified_since=2024-01-01T00%3A00%3A00", strings.NewReader("payload"))
	req.Header.Set("X-OTX-API-KEY", "k")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("vendor request through a loopback mirror: %v", err)
	}
	resp.Body.Close()
	want := []seen{
		{"POST", "/prefix/otx.alienvault.com/api/v1/pulses/subscribed", "limit=50&modified_since=2024-01-01T00%3A00%3A00", "k", "payload"},
		{"GET", "/prefix/otx.alienvault.com/api/v1/pulses/subscribed", "page=2", "k", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("mirror saw %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: mirror saw %+v, want %+v", i, got[i], want[i])
		}
	}
	if req.URL.Host != "otx.alienvault.com" {
		t.Errorf("the caller's request was changed: %s", req.URL)
	}

	// The client of user URLs does not trust the mirror.
	_, err = egress.NewClient(egress.Options{}).Get(mirror.URL + "/prefix/otx.alienvault.com/x")
	var refused *egress.RefusedError
	if !errors.As(err, &refused) {
		t.Errorf("user-URL client reaching the mirror's loopback address: %v, want a refusal", err)
	}
}

func TestVendorClientWithoutMirror(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c, err := egress.NewVendorClient(egress.Options{}, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(srv.URL)
	var refused *egress.RefusedError
	if !errors.As(err, &refused) {
		t.Errorf("no mirror, loopback vendor: %v, want a refusal", err)
	}
}

func TestParseMirror(t *testing.T) {
	for name, tc := range map[string]struct {
		raw string
		ok  bool
	}{
		"http":          {"http://127.0.0.1:8080", true},
		"https path":    {"https://mirror.example.com/feeds/", true},
		"no scheme":     {"mirror.example.com", false},
		"ftp":           {"ftp://mirror.example.com", false},
		"userinfo":      {"https://u:p@mirror.example.com", false},
		"query":         {"https://mirror.example.com/?a=1", false},
		"no host":       {"http:///x", false},
		"dot segment":   {"https://mirror.example.com/feeds/%2e%2e/", false},
		"encoded slash": {"https://mirror.example.com/feeds%2fx/", false},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := egress.ParseMirror(tc.raw)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseMirror(%q) = %v, want ok %v", tc.raw, err, tc.ok)
			}
			if err != nil && strings.Contains(err.Error(), "u:p") {
				t.Errorf("error quotes the credentials: %v", err)
			}
		})
	}
}

// TestMirrorTrustedOnlyUnderItsPrefix: the mirror's address is trusted for
// its configured prefix only. A mirror that redirects elsewhere on its host,
// and vendor URLs or redirects whose dot segments or encoded slashes a
// server would resolve outside the prefix, are refused before any request
// leaves; the mirror's own files are still fetched, by a redirect too. (A
// relative redirect is resolved against the vendor's URL, so it is
// rewritten under the prefix like any vendor link.) The mirror here cleans
// and decodes paths as web servers do, so what got through would be read.
func TestMirrorTrustedOnlyUnderItsPrefix(t *testing.T) {
	var outside atomic.Int64
	mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Backslashes as slashes (IIS) and ";" parameters dropped from
		// segments (Tomcat), then cleaned.
		segs := strings.Split(strings.ReplaceAll(r.URL.Path, `\`, "/"), "/")
		for i, seg := range segs {
			segs[i], _, _ = strings.Cut(seg, ";")
		}
		p := path.Clean(strings.Join(segs, "/"))
		self := "http://" + r.Host
		if !strings.HasPrefix(p, "/prefix/") {
			outside.Add(1)
			io.WriteString(w, "internal page")
			return
		}
		switch strings.TrimPrefix(p, "/prefix/otx.alienvault.com") {
		case "/feed":
			io.WriteString(w, "feed")
		case "/to-outside":
			http.Redirect(w, r, self+"/admin/secret", http.StatusFound)
		case "/to-dot-dot":
			w.Header().Set("Location", self+"/prefix/%2e%2e/admin/secret")
			w.WriteHeader(http.StatusFound)
		case "/to-encoded-slash":
			w.Header().Set("Location", self+"/prefix/..%2fadmin/secret")
			w.WriteHeader(http.StatusFound)
		case "/to-inside":
			http.Redirect(w, r, self+"/prefix/otx.alienvault.com/feed", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer mirror.Close()
	c, err := egress.NewVendorClient(egress.Options{}, mirror.URL+"/prefix/")
	if err != nil {
		t.Fatal(err)
	}
	get := func(u string) (string, error) {
		resp, err := c.Get(u)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	for _, u := range []string{"https://otx.alienvault.com/feed", "https://otx.alienvault.com/to-inside", mirror.URL + "/prefix/otx.alienvault.com/feed"} {
		if body, err := get(u); err != nil || body != "feed" {
			t.Errorf("GET %s: %q, %v; want the mirror's file", u, body, err)
		}
	}
	for name, u := range map[string]string{
		"redirect outside the prefix":    "https://otx.alienvault.com/to-outside",
		"redirect with %2e%2e":           "https://otx.alienvault.com/to-dot-dot",
		"redirect with %2f":              "https://otx.alienvault.com/to-encoded-slash",
		"vendor path with %2e%2e":        "https://otx.alienvault.com/%2e%2e/%2e%2e/admin/secret",
		"vendor path with .%2e":          "https://otx.alienvault.com/.%2e/.%2E/admin/secret",
		"vendor path with literal ..":    "https://otx.alienvault.com/../../admin/secret",
		"vendor path with %2f":           "https://otx.alienvault.com/..%2f..%2fadmin/secret",
		"vendor path with %5c":           "https://otx.alienvault.com/..%5c..%5cadmin/secret",
		"vendor path with ..;":           "https://otx.alienvault.com/..;/..;/admin/secret",
		"mirror host outside prefix":     mirror.URL + "/admin/secret",
		"mirror host, prefix look-alike": mirror.URL + "/prefixed/otx.alienvault.com/feed",
		"mirror host with %2e%2e":        mirror.URL + "/prefix/%2e%2e/admin/secret",
	} {
		t.Run(name, func(t *testing.T) {
			body, err := get(u)
			var refused *egress.RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("GET %s: %q, %v; want a refusal", u, body, err)
			}
			if k := ioc.FailureOf(ioc.HTTPRequestFailure("test", err)); k != ioc.InvalidURL {
				t.Errorf("kind %q, want Invalid URL", k)
			}
		})
	}
	if n := outside.Load(); n != 0 {
		t.Fatalf("the mirror was asked %d times for a path outside its prefix", n)
	}
}
