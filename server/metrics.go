package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus collectors, on a registry of its own so
// that tests can run several servers in one process.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// passwordChecks counts the bcrypt comparisons of logins: what the
	// login throttle bounds.
	passwordChecks prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tifeeds_http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tifeeds_http_request_duration_seconds",
			Help:    "HTTP request durations by route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
		passwordChecks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tifeeds_password_checks_total",
			Help: "Passwords checked by logins (each a bcrypt comparison).",
		}),
	}
	m.registry.MustRegister(m.requests, m.duration, m.passwordChecks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observe(route string, code int, seconds float64) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(route).Observe(seconds)
}

// metricsHandler serves the metrics; with a MetricsToken, only to a
// scraper that sends it as a bearer token (Prometheus' authorization or
// bearer_token_file). The token is not a user's credential: a scraper
// needs no API key, and a leaked token shows metrics, nothing more.
func (s *Server) metricsHandler() http.Handler {
	h := promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{})
	if s.cfg.MetricsToken == "" {
		return h
	}
	// Hashes are compared, in constant time, so neither the token's bytes
	// nor its length show in the time of a refusal.
	want := sha256.Sum256([]byte(s.cfg.MetricsToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(strings.TrimSpace(token)))
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tifeeds metrics"`)
			writeError(w, http.StatusUnauthorized, "unauthenticated", "/metrics needs the bearer token of --metrics-token")
			return
		}
		h.ServeHTTP(w, r)
	})
}
