package server

import (
	"net/http"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/server/taxiisrv"
)

// registerTAXII mounts the TAXII 2.1 server at /taxii2/ behind HTTP basic
// auth with the API keys. Discovery names its API root under --public-url,
// or relative to itself. Every authenticated user reads it: IoCs are not
// bound to tenants, and a tenant-scoped user reads them all elsewhere too.
func (s *Server) registerTAXII(mux *http.ServeMux) {
	mux.Handle(taxiisrv.Prefix, s.requireTAXIIUser(taxiisrv.New(s.taxiiDB, s.log, taxiisrv.Options{PublicURL: s.cfg.PublicURL,
		Flagged: func(kind ioc.Kind, value string) bool { return s.resolver.WarninglistSet().Flagged(kind, value) }})))
}

// requireTAXIIUser is requireUser answering with TAXII error messages.
func (s *Server) requireTAXIIUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.authenticate(r)
		switch {
		case err == nil:
			next.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), u)))
		case badCredentials(err):
			w.Header().Set("WWW-Authenticate", `Basic realm="tifeeds", charset="UTF-8"`)
			taxiisrv.WriteError(w, http.StatusUnauthorized, "Unauthorized",
				"valid credentials are required: HTTP basic auth with username and API key")
		default:
			s.refuseCaller(w, r, err)
		}
	})
}
