package server

import (
	"context"
	"net/http"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/store"
)

// tenantGroupStore is what the tenant group handlers ask of the store.
type tenantGroupStore interface {
	TenantGroups(ctx context.Context, page store.Page) ([]*store.TenantGroup, error)
	TenantGroup(ctx context.Context, id string) (*store.TenantGroup, error)
	CreateTenantGroup(ctx context.Context, in store.TenantGroupInput) (*store.TenantGroup, error)
	PatchTenantGroup(ctx context.Context, id string, in store.TenantGroupInput) (*store.TenantGroup, error)
	DeleteTenantGroup(ctx context.Context, id string) error
}

// tenantGroupJSON is a tenant group as the REST API shows it; created_at
// and updated_at are epoch seconds.
type tenantGroupJSON struct {
	TgrpID    string   `json:"tgrp_id"`
	TgrpName  string   `json:"tgrp_name"`
	Tenants   []string `json:"tenants"`
	TgrpLogo  string   `json:"tgrp_logo"`
	OrgID     string   `json:"org_id"`
	CreatedAt int64    `json:"created_at"`
	UpdatedAt int64    `json:"updated_at"`
}

func toTenantGroupJSON(g *store.TenantGroup) tenantGroupJSON {
	ids := g.TenantIDs
	if ids == nil {
		ids = []string{}
	}
	return tenantGroupJSON{
		TgrpID: g.ID, TgrpName: g.Name, Tenants: ids, TgrpLogo: g.Logo, OrgID: g.OrgID,
		CreatedAt: g.CreatedAt.Unix(), UpdatedAt: g.UpdatedAt.Unix(),
	}
}

var (
	groupFieldNames = map[string]string{"name": "tgrp_name", "tenants": "tenants", "logo": "tgrp_logo"}
	groupWritable   = []string{"tgrp_name", "tenants", "tgrp_logo"}
	// groupReadOnly may be sent back as read; they are ignored.
	groupReadOnly = []string{"tgrp_id", "org_id", "created_at", "updated_at"}
)

func decodeTenantGroup(r *http.Request) (store.TenantGroupInput, error) {
	var in store.TenantGroupInput
	o, err := decodeObject(r, groupWritable, groupReadOnly)
	if err != nil {
		return in, err
	}
	if in.Name, err = o.str("tgrp_name"); err != nil {
		return in, err
	}
	if in.Tenants, err = o.strings("tenants"); err != nil {
		return in, err
	}
	if in.Logo, err = o.str("tgrp_logo"); err != nil {
		return in, err
	}
	return in, nil
}

// requireRoot answers 403 to tenant-scoped callers: groups span tenants.
func requireRoot(w http.ResponseWriter, r *http.Request) bool {
	if _, err := auth.Require(r.Context(), store.ScopeRoot); err != nil {
		writeErr(w, r, err)
		return false
	}
	return true
}

func (s *Server) listTenantGroups(w http.ResponseWriter, r *http.Request) {
	if !requireRoot(w, r) {
		return
	}
	page, err := parsePage(r)
	if err != nil {
		writeRESTErr(w, r, err, nil)
		return
	}
	groups, err := s.groupsDB.TenantGroups(r.Context(), page)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	out := make([]tenantGroupJSON, 0, len(groups))
	for _, g := range groups {
		out = append(out, toTenantGroupJSON(g))
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
}

func (s *Server) getTenantGroup(w http.ResponseWriter, r *http.Request) {
	if !requireRoot(w, r) {
		return
	}
	g, err := s.groupsDB.TenantGroup(r.Context(), r.PathValue("id"))
	if err != nil {
		writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": toTenantGroupJSON(g)})
}

func (s *Server) createTenantGroup(w http.ResponseWriter, r *http.Request) {
	in, err := decodeTenantGroup(r)
	if err != nil {
		writeRESTErr(w, r, err, groupFieldNames)
		return
	}
	g, err := s.groupsDB.CreateTenantGroup(r.Context(), in)
	if err != nil {
		writeRESTErr(w, r, err, groupFieldNames)
		return
	}
	s.log.InfoContext(r.Context(), "Tenant group created", "tgrp_id", g.ID, "count", len(g.TenantIDs))
	s.resolver.Audit.Record(r.Context(), audit.TenantGroupCreate, audit.TenantGroupTarget(g.ID, g.Name), audit.Fields(in))
	w.Header().Set("Location", restPrefix+"/tenant_groups/"+g.ID)
	writeJSON(w, http.StatusCreated, map[string]any{"data": toTenantGroupJSON(g)})
}

func (s *Server) updateTenantGroup(w http.ResponseWriter, r *http.Request) {
	in, err := decodeTenantGroup(r)
	if err != nil {
		writeRESTErr(w, r, err, groupFieldNames)
		return
	}
	g, err := s.groupsDB.PatchTenantGroup(r.Context(), r.PathValue("id"), in)
	if err != nil {
		writeRESTErr(w, r, err, groupFieldNames)
		return
	}
	s.resolver.Audit.Record(r.Context(), audit.TenantGroupUpdate, audit.TenantGroupTarget(g.ID, g.Name), audit.Fields(in))
	writeJSON(w, http.StatusOK, map[string]any{"data": toTenantGroupJSON(g)})
}

func (s *Server) deleteTenantGroup(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.groupsDB.DeleteTenantGroup(r.Context(), id); err != nil {
		writeErr(w, r, err)
		return
	}
	s.resolver.Audit.Record(r.Context(), audit.TenantGroupDelete, audit.TenantGroupTarget(id, ""), nil)
	s.log.InfoContext(r.Context(), "Tenant group deleted", "tgrp_id", id)
	writeJSON(w, http.StatusOK, map[string]string{"data": "tenant group " + id + " deleted; its tenants remain"})
}
