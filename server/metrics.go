package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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
