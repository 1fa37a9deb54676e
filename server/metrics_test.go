package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestMetricsToken: with --metrics-token set, /metrics answers only a
// scraper sending it as a bearer token; without, it stays open.
func TestMetricsToken(t *testing.T) {
	st := storetest.NewSQLite(t)
	const token = "scrape-token-0123456789abcdef"
	f := newFixture(t, st, func(c *server.Config) { c.MetricsToken = token })
	for name, h := range map[string]map[string]string{
		"no credential": nil,
		"wrong token":   {"Authorization": "Bearer " + token + "x"},
		"token prefix":  {"Authorization": "Bearer " + token[:10]},
		"not bearer":    {"Authorization": "Basic " + token},
	} {
		r := f.do("GET", "/metrics", "", "", "", h)
		if r.status != http.StatusUnauthorized || errorCode(t, r.body) != "unauthenticated" ||
			!strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %s %v, want 401 with WWW-Authenticate: Bearer", name, r.status, r.body, r.header)
		}
		if strings.Contains(string(r.body), token) {
			t.Errorf("%s: the answer shows the token", name)
		}
	}
	if r := f.do("GET", "/metrics", "admin", adminKey, "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("an API key instead of the token: %d", r.status)
	}
	r := f.do("GET", "/metrics", "", "", "", map[string]string{"Authorization": "Bearer " + token})
	if r.status != 200 || !strings.Contains(string(r.body), "tifeeds_http_requests_total") {
		t.Errorf("with the token: %d %.200s", r.status, r.body)
	}

	open := newFixture(t, storetest.NewSQLite(t))
	if r := open.do("GET", "/metrics", "", "", "", nil); r.status != 200 {
		t.Errorf("without --metrics-token: %d, want the metrics open as before", r.status)
	}
}
