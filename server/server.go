// Package server is tifeeds' HTTP edge: routing, authentication, the REST
// API under /connect/api/v1, GraphQL and its websocket, the embedded
// dashboard, health and metrics.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/store"
)

// Edition is how the service is sold: on-premises or managed (SaaS).
type Edition string

const (
	EditionOnPrem Edition = "onprem"
	EditionSaaS   Edition = "saas"
)

// Config is what the server needs to know beyond its collaborators.
type Config struct {
	Addr            string
	TLSCert, TLSKey string
	Edition         Edition
	BodyLimit       int64         // bytes; larger request bodies get 413
	SessionTTL      time.Duration // dashboard sessions
	ShutdownTimeout time.Duration
	// CookieSecure forces the session cookie's Secure flag, for a server
	// behind a TLS-terminating proxy; it is set anyway when serving TLS.
	CookieSecure bool
	// AllowedOrigins are origins (scheme://host[:port]) that may send
	// state-changing browser requests besides the request's own Host, for a
	// reverse proxy that rewrites Host.
	AllowedOrigins []string
}

// DefaultConfig returns the defaults of `tifeeds serve`.
func DefaultConfig() Config {
	return Config{
		Addr:            "127.0.0.1:8080",
		Edition:         EditionOnPrem,
		BodyLimit:       1 << 20,
		SessionTTL:      12 * time.Hour,
		ShutdownTimeout: 30 * time.Second,
	}
}

// Server is the HTTP server; everything it needs is a field.
type Server struct {
	cfg      Config
	store    *store.Store
	resolver *graph.Resolver
	log      *slog.Logger
	metrics  *metrics
	origins  originPolicy
	handler  http.Handler
}

// New builds the server and its routes.
func New(cfg Config, st *store.Store, resolver *graph.Resolver, log *slog.Logger) *Server {
	s := &Server{cfg: cfg, store: st, resolver: resolver, log: log, metrics: newMetrics(),
		origins: newOriginPolicy(cfg.AllowedOrigins)}
	s.handler = s.routes()
	return s
}

// Handler returns the server's root handler with its middleware.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metricsHandler())
	mux.HandleFunc("POST /api/login", s.login)
	mux.HandleFunc("POST /api/logout", s.logout)
	mux.Handle("/graphql", s.graphqlHandler())
	s.registerREST(mux)
	mux.Handle("GET /api/export/feeds.csv", s.requireUser(http.HandlerFunc(s.exportFeeds)))
	mux.Handle("GET /api/export/iocs.csv", s.requireUser(s.exportIoCs("csv")))
	mux.Handle("GET /api/export/iocs.txt", s.requireUser(s.exportIoCs("txt")))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	mux.Handle("/", spaHandler())
	return s.observe(s.recoverPanics(securityHeaders(s.forbidCrossSite(s.limitBody(mux)))))
}

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz reports whether the database answers, for load balancers.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		// The driver's error names hosts, users and files: logged, not
		// shown to anonymous callers.
		s.log.ErrorContext(r.Context(), "Database does not answer", "error", err)
		writeUnavailable(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "database": string(s.store.Dialect)})
}

// ListenAndServe serves until ctx is cancelled, then stops accepting, lets
// requests in flight finish (up to ShutdownTimeout) and returns.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: unable to listen on %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is ListenAndServe on a listener the caller opened.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() {
		scheme := "http"
		var err error
		if s.cfg.TLSCert != "" {
			scheme = "https"
			s.log.Info("Serving", "addr", "https://"+ln.Addr().String(), "edition", s.cfg.Edition)
			err = srv.ServeTLS(ln, s.cfg.TLSCert, s.cfg.TLSKey)
		} else {
			s.log.Info("Serving", "addr", scheme+"://"+ln.Addr().String(), "edition", s.cfg.Edition)
			err = srv.Serve(ln)
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("Shutting down HTTP server", "timeout", s.cfg.ShutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("server: %w", serveErr)
	}
	if err != nil {
		return fmt.Errorf("server: shutdown: %w", err)
	}
	return nil
}
