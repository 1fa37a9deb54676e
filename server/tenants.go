package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/store"
)

// tenantStore is what the tenant handlers ask of the store.
type tenantStore interface {
	TenantsFor(ctx context.Context, u *store.User, page store.Page) ([]*store.Tenant, error)
	TenantFor(ctx context.Context, u *store.User, id string) (*store.Tenant, error)
	CreateTenant(ctx context.Context, in store.TenantInput, rules store.TenantRules) (*store.Tenant, error)
	PatchTenant(ctx context.Context, id string, in store.TenantInput, rules store.TenantRules) (*store.Tenant, error)
	DeleteTenant(ctx context.Context, id string) (deletedGroupID string, err error)
}

// tenantJSON is a tenant as the REST API shows it. Existing clients read
// these names and types: ingestion_limit and ts_created are strings.
type tenantJSON struct {
	CustID               string        `json:"cust_id"`
	CustName             string        `json:"cust_name"`
	Contact              string        `json:"contact"`
	ContactEmail         string        `json:"contact_email"`
	ContactPhone         string        `json:"contact_phone"`
	Address              string        `json:"address"`
	Info                 string        `json:"info"`
	RetentionGroup       string        `json:"retention_group"`
	MFAEnabled           bool          `json:"mfa_enabled"`
	AuthenticationMethod string        `json:"authentication_method"`
	SSOConfig            ssoConfigJSON `json:"sso_config"`
	IngestionLimit       *string       `json:"ingestion_limit"` // null when there is none
	OrgID                string        `json:"org_id"`
	TgrpName             string        `json:"tgrp_name"`
	DSNum                int           `json:"ds_num"`
	UserNum              int           `json:"user_num"`
	TSCreated            string        `json:"ts_created"`
}

// ssoConfigJSON always carries the seven fields, so that clients may read
// sso_config.issuer_url of a tenant without SSO.
type ssoConfigJSON struct {
	AllowClockSkew  bool   `json:"allow_clock_skew"`
	IdpCertificate  string `json:"idp_certificate"`
	IdpMetadata     string `json:"idp_metadata"`
	IdpCallbackType string `json:"idp_callback_type"`
	IssuerURL       string `json:"issuer_url"`
	SSOConfigMethod string `json:"sso_config_method"`
	SSOEntryPoint   string `json:"sso_entry_point"`
}

// ssoConfigWrite is sso_config as clients send it; unknown fields are refused.
type ssoConfigWrite struct {
	AllowClockSkew  *bool   `json:"allow_clock_skew"`
	IdpCertificate  *string `json:"idp_certificate"`
	IdpMetadata     *string `json:"idp_metadata"`
	IdpCallbackType *string `json:"idp_callback_type"`
	IssuerURL       *string `json:"issuer_url"`
	SSOConfigMethod *string `json:"sso_config_method"`
	SSOEntryPoint   *string `json:"sso_entry_point"`
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func toTenantJSON(t *store.Tenant) tenantJSON {
	out := tenantJSON{
		CustID: t.ID, CustName: t.Name, Contact: t.Contact, ContactEmail: t.ContactEmail,
		ContactPhone: t.ContactPhone, Address: t.Address, Info: t.Info, RetentionGroup: t.RetentionGroup,
		MFAEnabled: t.MFAEnabled, AuthenticationMethod: t.AuthenticationMethod, OrgID: t.OrgID,
		TgrpName: t.GroupName, DSNum: t.DSNum, UserNum: t.UserNum,
		TSCreated: strconv.FormatInt(t.CreatedAt.Unix(), 10),
	}
	if c := t.SSOConfig; c != nil {
		out.SSOConfig = ssoConfigJSON{
			AllowClockSkew: deref(c.AllowClockSkew), IdpCertificate: deref(c.IdpCertificate),
			IdpMetadata: deref(c.IdpMetadata), IdpCallbackType: deref(c.IdpCallbackType),
			IssuerURL: deref(c.IssuerURL), SSOConfigMethod: deref(c.SSOConfigMethod), SSOEntryPoint: deref(c.SSOEntryPoint),
		}
	}
	if t.IngestionLimit != nil {
		v := strconv.FormatInt(*t.IngestionLimit, 10)
		out.IngestionLimit = &v
	}
	return out
}

// tenantFieldNames maps the store's field names to the REST wire names.
var tenantFieldNames = map[string]string{
	"name": "cust_name", "contact": "contact", "contactEmail": "contact_email", "contactPhone": "contact_phone",
	"address": "address", "info": "info", "retentionGroup": "retention_group", "mfaEnabled": "mfa_enabled",
	"authenticationMethod": "authentication_method", "ssoConfig": "sso_config", "ingestionLimit": "ingestion_limit",
}

// tenantReadOnly are fields a client may send back as it read them; they
// are ignored, so that a read-modify-write round trip works.
var tenantReadOnly = []string{"cust_id", "org_id", "tgrp_name", "ds_num", "user_num", "ts_created"}

// requestError is a request the server cannot read: malformed JSON, a field
// of the wrong type, an unknown field or a bad query parameter (400).
type requestError struct {
	code, field, msg string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(code, field, format string, args ...any) error {
	return &requestError{code: code, field: field, msg: fmt.Sprintf(format, args...)}
}

// writeRESTErr writes err with the field named as the REST API names it.
func writeRESTErr(w http.ResponseWriter, r *http.Request, err error, names map[string]string) {
	var reqErr *requestError
	if errors.As(err, &reqErr) {
		writeJSON(w, http.StatusBadRequest, map[string]apiError{"error": {Code: reqErr.code, Message: reqErr.msg, Field: reqErr.field}})
		return
	}
	var valErr *store.ValidationError
	if errors.As(err, &valErr) && !valErr.Malformed { // input bounds name the wire field already
		if name, ok := names[valErr.Field]; ok {
			renamed := *valErr
			renamed.Field = name
			err = &renamed
		}
	}
	writeErr(w, r, err)
}

// jsonObject is a request body read field by field, so that a field given
// as null is told apart from one not given.
type jsonObject map[string]json.RawMessage

// decodeObject reads a JSON object body, refusing malformed JSON, other
// JSON values, trailing data and fields outside writable and readOnly.
func decodeObject(r *http.Request, writable []string, readOnly []string) (jsonObject, error) {
	dec := json.NewDecoder(r.Body)
	var obj jsonObject
	if err := dec.Decode(&obj); err != nil {
		var maxBytes *http.MaxBytesError
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &maxBytes):
			return nil, err
		case errors.Is(err, io.EOF):
			return nil, badRequest("invalid_json", "", "the request body must be a JSON object; it is empty")
		case errors.As(err, &typeErr):
			return nil, badRequest("invalid_json", "", "the request body must be a JSON object, not %s", typeErr.Value)
		default:
			return nil, badRequest("invalid_json", "", "the request body is not valid JSON: %v", err)
		}
	}
	if obj == nil {
		return nil, badRequest("invalid_json", "", "the request body must be a JSON object, not null")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var maxBytes *http.MaxBytesError
		if errors.As(err, &maxBytes) {
			return nil, err
		}
		return nil, badRequest("invalid_json", "", "the request body must hold one JSON object and nothing after it")
	}
	known := make(map[string]bool, len(writable)+len(readOnly))
	for _, k := range writable {
		known[k] = true
	}
	for _, k := range readOnly {
		known[k] = true
	}
	for k := range obj {
		if !known[k] {
			return nil, badRequest("unknown_field", k, "unknown field %q", k)
		}
	}
	if err := checkBodyStrings(obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func typeError(field, want string) error {
	return badRequest("invalid_type", field, "%s must be %s", field, want)
}

// optional reads field as a T: absent, null, or a value; want names the
// expected type in the error.
func optional[T any](o jsonObject, field, want string) (store.Opt[T], error) {
	raw, ok := o[field]
	switch {
	case !ok:
		return store.Opt[T]{}, nil
	case isNull(raw):
		return store.Null[T](), nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return store.Opt[T]{}, typeError(field, want)
	}
	return store.Some(v), nil
}

func (o jsonObject) str(field string) (store.Opt[string], error) {
	return optional[string](o, field, "a string")
}

func (o jsonObject) boolean(field string) (store.Opt[bool], error) {
	return optional[bool](o, field, "true or false")
}

// integer reads a JSON integer. A string of digits is accepted too, since
// that is how the API shows ingestion_limit on read.
func (o jsonObject) integer(field string) (store.Opt[int64], error) {
	raw, ok := o[field]
	switch {
	case !ok:
		return store.Opt[int64]{}, nil
	case isNull(raw):
		return store.Null[int64](), nil
	}
	var num json.Number
	if err := json.Unmarshal(raw, &num); err != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return store.Opt[int64]{}, typeError(field, "an integer")
		}
		num = json.Number(s)
	}
	v, err := strconv.ParseInt(num.String(), 10, 64)
	if err != nil {
		return store.Opt[int64]{}, typeError(field, "an integer")
	}
	return store.Some(v), nil
}

// info reads a string as it is, and any other JSON value as its compact
// JSON text: either way the store keeps JSON text (store.NormalizeInfo).
func (o jsonObject) info(field string) (store.Opt[string], error) {
	raw, ok := o[field]
	switch {
	case !ok:
		return store.Opt[string]{}, nil
	case isNull(raw):
		return store.Null[string](), nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return store.Some(s), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return store.Opt[string]{}, typeError(field, "a string or a JSON value")
	}
	return store.Some(buf.String()), nil
}

func (o jsonObject) ssoConfig(field string) (store.Opt[store.SSOConfig], error) {
	raw, ok := o[field]
	switch {
	case !ok:
		return store.Opt[store.SSOConfig]{}, nil
	case isNull(raw):
		return store.Null[store.SSOConfig](), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c ssoConfigWrite
	if err := dec.Decode(&c); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			want := "a string"
			if typeErr.Field == "allow_clock_skew" {
				want = "true or false"
			}
			return store.Opt[store.SSOConfig]{}, typeError(field+"."+typeErr.Field, want)
		}
		if errors.As(err, &typeErr) {
			return store.Opt[store.SSOConfig]{}, typeError(field, "an object")
		}
		// The decoder's only other error here is `json: unknown field "x"`.
		name := field
		if _, quoted, ok := strings.Cut(err.Error(), "unknown field "); ok {
			if k, err := strconv.Unquote(quoted); err == nil {
				name = field + "." + k
			}
		}
		return store.Opt[store.SSOConfig]{}, badRequest("unknown_field", name, "unknown field %q", name)
	}
	return store.Some(store.SSOConfig{
		AllowClockSkew: c.AllowClockSkew, IdpCertificate: c.IdpCertificate, IdpMetadata: c.IdpMetadata,
		IdpCallbackType: c.IdpCallbackType, IssuerURL: c.IssuerURL, SSOConfigMethod: c.SSOConfigMethod,
		SSOEntryPoint: c.SSOEntryPoint,
	}), nil
}

func (o jsonObject) strings(field string) (store.Opt[[]string], error) {
	raw, ok := o[field]
	switch {
	case !ok:
		return store.Opt[[]string]{}, nil
	case isNull(raw):
		return store.Null[[]string](), nil
	}
	var v []string
	if err := json.Unmarshal(raw, &v); err != nil {
		return store.Opt[[]string]{}, typeError(field, "an array of strings")
	}
	if v == nil {
		v = []string{}
	}
	return store.Some(v), nil
}

var tenantWritable = []string{"cust_name", "contact", "contact_email", "contact_phone", "address", "info",
	"retention_group", "mfa_enabled", "authentication_method", "sso_config", "ingestion_limit"}

// decodeTenant reads a tenant body into the input the store validates.
func decodeTenant(r *http.Request) (store.TenantInput, error) {
	var in store.TenantInput
	o, err := decodeObject(r, tenantWritable, tenantReadOnly)
	if err != nil {
		return in, err
	}
	for _, f := range []struct {
		field string
		dst   *store.Opt[string]
	}{
		{"cust_name", &in.Name}, {"contact", &in.Contact}, {"contact_email", &in.ContactEmail},
		{"contact_phone", &in.ContactPhone}, {"address", &in.Address},
		{"retention_group", &in.RetentionGroup}, {"authentication_method", &in.AuthenticationMethod},
	} {
		if *f.dst, err = o.str(f.field); err != nil {
			return in, err
		}
	}
	if in.Info, err = o.info("info"); err != nil {
		return in, err
	}
	if in.MFAEnabled, err = o.boolean("mfa_enabled"); err != nil {
		return in, err
	}
	if in.SSOConfig, err = o.ssoConfig("sso_config"); err != nil {
		return in, err
	}
	if in.IngestionLimit, err = o.integer("ingestion_limit"); err != nil {
		return in, err
	}
	return in, nil
}

// parsePage reads ?limit=&offset=; neither given means the whole list.
func parsePage(r *http.Request) (store.Page, error) {
	var vals [2]*int
	for i, name := range []string{"limit", "offset"} {
		s := r.URL.Query().Get(name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return store.Page{}, badRequest("invalid_query", name, "%s must be an integer, not %q", name, s)
		}
		vals[i] = &n
	}
	page, err := store.NewPage(vals[0], vals[1])
	var valErr *store.ValidationError
	if errors.As(err, &valErr) {
		return page, badRequest("invalid_query", valErr.Field, "%s", valErr.Error())
	}
	return page, err
}

func (s *Server) tenantRules() store.TenantRules {
	return store.TenantRules{SaaS: s.cfg.Edition == EditionSaaS}
}

// listTenants answers {"data": [tenant, ...]} by creation; a tenant-scoped
// caller sees only its own tenant.
func (s *Server) listTenants(w http.ResponseWriter, r *http.Request) {
	page, err := parsePage(r)
	if err != nil {
		writeRESTErr(w, r, err, nil)
		return
	}
	u, err := auth.UserFrom(r.Context())
	if err != nil {
		writeErr(w, r, err)
		return
	}
	tenants, err := s.tenantsDB.TenantsFor(r.Context(), u, page)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	out := make([]tenantJSON, 0, len(tenants))
	for _, t := range tenants {
		out = append(out, toTenantJSON(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
}

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request) {
	u, err := auth.UserFrom(r.Context())
	if err != nil {
		writeErr(w, r, err)
		return
	}
	t, err := s.tenantsDB.TenantFor(r.Context(), u, r.PathValue("id"))
	if err != nil {
		writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": toTenantJSON(t)})
}

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request) {
	in, err := decodeTenant(r)
	if err != nil {
		writeRESTErr(w, r, err, tenantFieldNames)
		return
	}
	t, err := s.tenantsDB.CreateTenant(r.Context(), in, s.tenantRules())
	if err != nil {
		writeRESTErr(w, r, err, tenantFieldNames)
		return
	}
	s.log.InfoContext(r.Context(), "Tenant created", "tenant_id", t.ID)
	s.resolver.Audit.Record(r.Context(), audit.TenantCreate, audit.TenantTarget(t.ID, t.Name), audit.Fields(in))
	w.Header().Set("Location", restPrefix+"/tenants/"+t.ID)
	writeJSON(w, http.StatusCreated, map[string]any{"data": toTenantJSON(t)})
}

func (s *Server) updateTenant(w http.ResponseWriter, r *http.Request) {
	in, err := decodeTenant(r)
	if err != nil {
		writeRESTErr(w, r, err, tenantFieldNames)
		return
	}
	t, err := s.tenantsDB.PatchTenant(r.Context(), r.PathValue("id"), in, s.tenantRules())
	if err != nil {
		writeRESTErr(w, r, err, tenantFieldNames)
		return
	}
	s.resolver.Audit.Record(r.Context(), audit.TenantUpdate, audit.TenantTarget(t.ID, t.Name), audit.Fields(in))
	writeJSON(w, http.StatusOK, map[string]any{"data": toTenantJSON(t)})
}

func (s *Server) deleteTenant(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	groupID, err := s.tenantsDB.DeleteTenant(r.Context(), id)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	s.resolver.Audit.Record(r.Context(), audit.TenantDelete, audit.TenantTarget(id, ""), nil)
	s.announceRevocation(events.Revocation{TenantID: id})
	msg := "tenant " + id + " deleted"
	if groupID != "" {
		msg += "; tenant group " + groupID + " was left empty and deleted too"
		s.log.InfoContext(r.Context(), "Tenant group deleted with its last tenant", "tenant_id", id, "tgrp_id", groupID)
	}
	s.log.InfoContext(r.Context(), "Tenant deleted", "tenant_id", id)
	writeJSON(w, http.StatusOK, map[string]string{"data": msg})
}
