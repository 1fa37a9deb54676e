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
	"net/netip"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/server/taxiisrv"
	"github.com/tifeeds/tifeeds/sso"
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

	// RequestTimeout bounds the work of one request: its context ends then,
	// which cancels its statements on PostgreSQL and interrupts them on
	// SQLite. Websockets and streamed exports are exempt.
	RequestTimeout time.Duration
	// ReadHeaderTimeout and ReadTimeout bound reading a request's headers,
	// and its headers and body; a client trickling either is cut off.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	// WriteIdleTimeout bounds each write of an answer, not the whole
	// answer: a long export streams on, a client that stops reading is cut.
	WriteIdleTimeout time.Duration
	// IdleTimeout closes keep-alive connections with no request.
	IdleTimeout time.Duration
	// MaxLogins bounds the login requests in flight (they are read before
	// anyone is authenticated); more are refused with 503.
	MaxLogins int
	// Login is the login throttle and bcrypt bound.
	Login LoginLimits
	// TrustedProxies are the addresses whose X-Forwarded-For is believed
	// when telling who a client is; empty: the peer address is the client.
	TrustedProxies []netip.Prefix
	// SocketRecheck is how often an open websocket re-checks its credential
	// besides revocation events.
	SocketRecheck time.Duration
	// CredentialTTL is how long a verified API key or session is trusted
	// without asking the store (0: always ask); revocations drop it at once.
	CredentialTTL time.Duration
	// CookieSecure forces the session cookie's Secure flag, for a server
	// behind a TLS-terminating proxy; it is set anyway when serving TLS.
	CookieSecure bool
	// MaxExports bounds the IoC exports streaming at once, and so the
	// store's export connections (store.SetExportConns); MaxExportsPerUser
	// bounds one user's share. Past either, an export is refused at once
	// (503 or 429 with Retry-After): a client that stops reading holds its
	// export until the write deadline.
	MaxExports        int
	MaxExportsPerUser int
	// AllowedOrigins are origins (scheme://host[:port]) that may send
	// state-changing browser requests besides the request's own Host, for a
	// reverse proxy that rewrites Host.
	AllowedOrigins []string
	// PublicURL is the URL clients reach the server at (scheme://host[:port]
	// and an optional path prefix), for the links it hands out, such as
	// TAXII discovery's API roots; empty: those links are relative. The
	// request's Host header is never used: anyone can forge it.
	PublicURL string

	// AllowedHosts are further host names (Host header, port ignored) that
	// requests riding the session cookie may name; IP addresses, localhost
	// and the hosts of AllowedOrigins are always allowed. Other names are
	// refused, against DNS rebinding.
	AllowedHosts []string
	// MFAChallengeTTL is how long the second step of a sign-in (a TOTP
	// code, or enrolment) stays open after the password; 0 is
	// DefaultMFAChallengeTTL.
	MFAChallengeTTL time.Duration
	// SSOClock, when set, is the time SAML sign-ins are checked at (tests);
	// nil is the real clock.
	SSOClock func() time.Time
	// MetricsToken, when set, is the bearer token /metrics requires;
	// empty leaves /metrics open to whoever reaches the port.
	MetricsToken string
}

// DefaultConfig returns the defaults of `tifeeds serve`.
func DefaultConfig() Config {
	return Config{
		Addr:            "127.0.0.1:8080",
		Edition:         EditionOnPrem,
		BodyLimit:       1 << 20,
		SessionTTL:      12 * time.Hour,
		ShutdownTimeout: 30 * time.Second,

		RequestTimeout:    20 * time.Second,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteIdleTimeout:  30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxLogins:         64,
		Login:             DefaultLoginLimits(),
		SocketRecheck:     DefaultSocketRecheck,
		CredentialTTL:     DefaultCredentialTTL,
		MaxExports:        store.DefaultExportConns,
		MaxExportsPerUser: 2,
	}
}

// Server is the HTTP server; everything it needs is a field.
type Server struct {
	cfg      Config
	resolver *graph.Resolver
	log      *slog.Logger
	metrics  *metrics
	origins  originPolicy
	hosts    hostPolicy
	handler  http.Handler
	logins   *loginGuard
	sockets  sockets
	creds    *credentialCache
	exports  *exportSlots
	sso      *sso.Service

	// What each group of handlers asks of the store, declared beside it.
	tenantsDB tenantStore
	groupsDB  tenantGroupStore
	exportsDB exportStore
	auditDB   auditExportStore
	accounts  accountStore
	taxiiDB   taxiisrv.Store
	db        pinger
	dialect   store.Dialect
	// loaderStore is the store GraphQL's loaders read (graph.WithLoaders
	// takes it whole).
	loaderStore *store.Store
}

// pinger is what readiness asks of the store.
type pinger interface {
	Ping(ctx context.Context) error
}

// New builds the server and its routes.
func New(cfg Config, st *store.Store, resolver *graph.Resolver, log *slog.Logger) *Server {
	s := &Server{cfg: cfg, resolver: resolver, log: log, metrics: newMetrics(), logins: newLoginGuard(cfg.Login),
		origins: newOriginPolicy(cfg.AllowedOrigins), hosts: newHostPolicy(append([]string{cfg.PublicURL}, cfg.AllowedOrigins...), cfg.AllowedHosts)}
	if s.cfg.SocketRecheck <= 0 {
		s.cfg.SocketRecheck = DefaultSocketRecheck
	}
	s.creds = newCredentialCache(s.cfg.CredentialTTL)
	s.tenantsDB, s.groupsDB, s.exportsDB, s.accounts, s.taxiiDB, s.db = st, st, st, st, st, st
	s.loaderStore = st
	if st != nil {
		s.sso = sso.New(st, cfg.PublicURL)
		s.sso.Now = cfg.SSOClock
	}
	s.auditDB = st
	if st != nil {
		s.dialect = st.Dialect
	}
	def := DefaultConfig()
	if s.cfg.MaxExports <= 0 {
		s.cfg.MaxExports = def.MaxExports
	}
	if s.cfg.MaxExportsPerUser <= 0 {
		s.cfg.MaxExportsPerUser = def.MaxExportsPerUser
	}
	s.exports = newExportSlots(s.cfg.MaxExports, s.cfg.MaxExportsPerUser)
	if st != nil { // some tests serve only what needs no store
		st.SetExportConns(s.cfg.MaxExports)
	}
	if resolver.Events != nil {
		// For the server's lifetime, which is the bus's.
		resolver.Events.OnRevocation(s.revoked)
		// Cached tenant answers (store.Tenant) drop on every instance
		// when one of them changes a tenant.
		resolver.Events.OnSignal(events.SignalTenants, st.ForgetTenants)
		st.OnTenantWrite(func() { resolver.Events.PublishSignal(events.SignalTenants) })
	}
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
	mux.HandleFunc("POST /api/login/mfa", s.loginMFA)
	mux.HandleFunc("POST /api/login/mfa/enrol", s.loginMFAEnrol)
	mux.HandleFunc("POST /api/logout", s.logout)
	mux.Handle("/graphql", s.graphqlHandler())
	s.registerREST(mux)
	mux.Handle("GET /api/export/feeds.csv", s.requireUser(http.HandlerFunc(s.exportFeeds)))
	mux.Handle("GET /api/export/iocs.csv", s.requireUser(s.exportIoCs("csv")))
	mux.Handle("GET /api/export/iocs.txt", s.requireUser(s.exportIoCs("txt")))
	mux.Handle("GET /api/export/rules.rules", s.requireUser(http.HandlerFunc(s.exportRules)))
	mux.Handle("GET /api/export/iocs.stix.json", s.requireUser(http.HandlerFunc(s.exportSTIX)))
	mux.Handle("GET /api/export/audit.jsonl", s.requireUser(http.HandlerFunc(s.exportAudit)))
	s.registerTAXII(mux)
	s.registerSAML(mux)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	mux.Handle("/", spaHandler())
	h := s.observe(s.recoverPanics(securityHeaders(s.requireServedHost(s.forbidCrossSite(s.boundRequest(s.checkQuery(s.limitBody(s.withAuditClient(mux)))))))))
	if wrapForTests != nil {
		h = wrapForTests(h)
	}
	return h
}

// wrapForTests, when set (only ever by this package's tests, in an init),
// wraps the root handler of every server New builds: there the tests check
// each REST exchange against the OpenAPI document.
var wrapForTests func(http.Handler) http.Handler

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz reports whether the database answers, for load balancers.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		// The driver's error names hosts, users and files: logged, not
		// shown to anonymous callers.
		s.log.ErrorContext(r.Context(), "Database does not answer", "error", err)
		writeUnavailable(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "database": string(s.dialect)})
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
	if err := raiseFileLimit(); err != nil {
		s.log.Warn("Unable to raise the open files limit", "error", err)
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		// ReadTimeout covers headers and body; a websocket upgrade clears
		// it (gorilla resets the connection's deadlines). No WriteTimeout:
		// exports stream for minutes; boundRequest sets a deadline per write.
		ReadTimeout:    s.cfg.ReadTimeout,
		IdleTimeout:    s.cfg.IdleTimeout,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:    func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
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
