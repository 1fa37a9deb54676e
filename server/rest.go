package server

import (
	"net/http"
	"slices"
	"strings"
)

// restPrefix is where the programmatic API lives; the version is in the path.
const restPrefix = "/connect/api/v1"

// restRoute is one operation of the REST API. path is relative to
// restPrefix, in http.ServeMux syntax.
type restRoute struct {
	method, path string
	handler      http.Handler
}

// restRoutes are the operations of the REST API; server/openapi/openapi.json
// documents exactly these (a test compares them). Every one needs HTTP basic
// auth (username:api_key) and writes need root scope, except the API's own
// description. POST is routed with and without the trailing slash of the spec.
func (s *Server) restRoutes() []restRoute {
	var routes []restRoute
	add := func(method, path string, h http.HandlerFunc) {
		var next http.Handler = h
		if method == http.MethodPost || method == http.MethodPatch {
			next = requireJSONBody(next)
		}
		routes = append(routes, restRoute{method, path, s.requireUser(requireRootToWrite(next))})
	}
	add("GET", "/tenants", s.listTenants)
	add("GET", "/tenants/{$}", s.listTenants)
	add("POST", "/tenants", s.createTenant)
	add("POST", "/tenants/{$}", s.createTenant)
	add("GET", "/tenants/{id}", s.getTenant)
	add("PATCH", "/tenants/{id}", s.updateTenant)
	add("DELETE", "/tenants/{id}", s.deleteTenant)
	add("GET", "/tenant_groups", s.listTenantGroups)
	add("GET", "/tenant_groups/{$}", s.listTenantGroups)
	add("POST", "/tenant_groups", s.createTenantGroup)
	add("POST", "/tenant_groups/{$}", s.createTenantGroup)
	add("GET", "/tenant_groups/{id}", s.getTenantGroup)
	add("PATCH", "/tenant_groups/{id}", s.updateTenantGroup)
	add("DELETE", "/tenant_groups/{id}", s.deleteTenantGroup)
	// Public: it describes the API and holds no data; client generators
	// and gateways fetch it without credentials (docs/decisions.md).
	routes = append(routes, restRoute{"GET", "/openapi.json", openAPIDocument()})
	return routes
}

// routeRegistrar is what registerREST mounts the routes on: the server's
// mux, or a test's recorder of the patterns.
type routeRegistrar interface {
	Handle(pattern string, handler http.Handler)
}

// registerREST mounts the REST API. A path's other methods get 405 with
// Allow, and a path the API does not have gets 404, both as JSON errors
// (the mux's own answers are text).
func (s *Server) registerREST(mux routeRegistrar) {
	var paths []string
	allowed := map[string][]string{}
	for _, rt := range s.restRoutes() {
		mux.Handle(rt.method+" "+restPrefix+rt.path, rt.handler)
		if allowed[rt.path] == nil {
			paths = append(paths, rt.path)
		}
		allowed[rt.path] = append(allowed[rt.path], rt.method)
		if rt.method == http.MethodGet {
			allowed[rt.path] = append(allowed[rt.path], http.MethodHead)
		}
	}
	// A pattern with a method is more specific than the same path without
	// one, so these see only the methods the path lacks.
	for _, path := range paths {
		mux.Handle(restPrefix+path, methodNotAllowed(allowed[path]))
	}
	mux.Handle(restPrefix+"/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	}))
}

func methodNotAllowed(methods []string) http.Handler {
	methods = slices.Clone(methods)
	slices.Sort(methods)
	allow := strings.Join(methods, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed",
			r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+allow)
	})
}

// requireJSONBody answers 415 to a write whose body is not declared JSON:
// the spec has clients send Content-Type: application/json, and a body
// read as JSON whatever it claims to be would let a form post pass for an
// API call. An empty body needs no type; it is refused as invalid JSON.
func requireJSONBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && !jsonContent(r) {
			writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type",
				"the request body must be JSON, sent with Content-Type: application/json")
			return
		}
		next.ServeHTTP(w, r)
	})
}
