package egress_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/ingest/egress"
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
		"http":       {"http://127.0.0.1:8080", true},
		"https path": {"https://mirror.example.com/feeds/", true},
		"no scheme":  {"mirror.example.com", false},
		"ftp":        {"ftp://mirror.example.com", false},
		"userinfo":   {"https://u:p@mirror.example.com", false},
		"query":      {"https://mirror.example.com/?a=1", false},
		"no host":    {"http:///x", false},
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
