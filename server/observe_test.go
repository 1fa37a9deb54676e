package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRecoveryAndMetrics: a panicking handler answers a JSON 500 and the
// server goes on; requests are counted by route pattern and code.
func TestRecoveryAndMetrics(t *testing.T) {
	s := &Server{cfg: DefaultConfig(), log: slog.New(slog.DiscardHandler), metrics: newMetrics()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /boom/{id}", func(http.ResponseWriter, *http.Request) { panic("kaboom") })
	mux.HandleFunc("GET /fine/{id}", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	srv := httptest.NewServer(s.observe(s.recoverPanics(mux)))
	defer srv.Close()

	for _, path := range []string{"/boom/1", "/boom/2", "/fine/3"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.HasPrefix(path, "/boom") && (res.StatusCode != 500 || !strings.Contains(string(body), `"code":"internal"`)) {
			t.Errorf("%s: %d %s", path, res.StatusCode, body)
		}
	}
	rec := httptest.NewRecorder()
	s.metricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	for _, want := range []string{
		`tifeeds_http_requests_total{code="500",route="GET /boom/{id}"} 2`,
		`tifeeds_http_requests_total{code="200",route="GET /fine/{id}"} 1`,
		`tifeeds_http_request_duration_seconds_count{route="GET /boom/{id}"} 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
