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
	// POST is routed with and without the trailing slash of the spec.
	route("GET "+restPrefix+"/tenants", s.listTenants)
	route("GET "+restPrefix+"/tenants/{$}", s.listTenants)
	route("POST "+restPrefix+"/tenants", s.createTenant)
	route("POST "+restPrefix+"/tenants/{$}", s.createTenant)
	route("GET "+restPrefix+"/tenants/{id}", s.getTenant)
	route("PATCH "+restPrefix+"/tenants/{id}", s.updateTenant)
	route("DELETE "+restPrefix+"/tenants/{id}", s.deleteTenant)
	route("GET "+restPrefix+"/tenant_groups", s.listTenantGroups)
	route("GET "+restPrefix+"/tenant_groups/{$}", s.listTenantGroups)
	route("POST "+restPrefix+"/tenant_groups", s.createTenantGroup)
	route("POST "+restPrefix+"/tenant_groups/{$}", s.createTenantGroup)
	route("GET "+restPrefix+"/tenant_groups/{id}", s.getTenantGroup)
	route("PATCH "+restPrefix+"/tenant_groups/{id}", s.updateTenantGroup)
	route("DELETE "+restPrefix+"/tenant_groups/{id}", s.deleteTenantGroup)
	route(restPrefix+"/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
}
