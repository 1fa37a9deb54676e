package server

import (
	"net/http"
)

// restPrefix is where the programmatic API lives; the version is in the path.
const restPrefix = "/connect/api/v1"

// registerREST mounts the REST API. Every route needs HTTP basic auth
// (username:api_key); writes need root scope.
func (s *Server) registerREST(mux *http.ServeMux) {
	route := func(pattern string, h http.HandlerFunc) {
		mux.Handle(pattern, s.requireUser(requireRootToWrite(h)))
	}
	// The tenants and tenant groups routes are added here.
	route(restPrefix+"/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
}
