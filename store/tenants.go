package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"time"

	"github.com/uptrace/bun"
)

// Tenant is an organisational customer of an MSSP.
type Tenant struct {
	bun.BaseModel `bun:"table:tenants,alias:t"`

	ID                   string     `bun:"id,pk"`
	Seq                  int64      `bun:"seq,notnull"` // creation order, for stable listing
	Name                 string     `bun:"name,notnull"`
	Contact              string     `bun:"contact,notnull"`
	ContactEmail         string     `bun:"contact_email,notnull"`
	ContactPhone         string     `bun:"contact_phone,notnull"`
	Address              string     `bun:"address,notnull"`
	Info                 string     `bun:"info,notnull"` // JSON text, or "" when never set
	RetentionGroup       string     `bun:"retention_group,notnull"`
	MFAEnabled           bool       `bun:"mfa_enabled,notnull"`
	AuthenticationMethod string     `bun:"authentication_method,notnull"`
	SSOConfig            *SSOConfig `bun:"sso_config,type:json"`
	IngestionLimit       *int64     `bun:"ingestion_limit"`
	OrgID                string     `bun:"org_id,notnull"`
	GroupID              *string    `bun:"group_id"`
	GroupName            string     `bun:"group_name,scanonly"`
	DSNum                int        `bun:"ds_num,notnull"`
	UserNum              int        `bun:"user_num,scanonly"` // users bound to the tenant, counted on read
	CreatedAt            time.Time  `bun:"created_at,notnull"`
	UpdatedAt            time.Time  `bun:"updated_at,notnull"`
}

// SSOConfig is a tenant's SAML single sign-on settings.
type SSOConfig struct {
	AllowClockSkew  *bool   `json:"allow_clock_skew,omitempty"`
	IdpCertificate  *string `json:"idp_certificate,omitempty"`
	IdpMetadata     *string `json:"idp_metadata,omitempty"`
	IdpCallbackType *string `json:"idp_callback_type,omitempty"`
	IssuerURL       *string `json:"issuer_url,omitempty"`
	SSOConfigMethod *string `json:"sso_config_method,omitempty"`
	SSOEntryPoint   *string `json:"sso_entry_point,omitempty"`
}

// Values of SSOConfig.IdpCallbackType: who may start a SAML sign-in. Empty
// is IdPCallbackSPInitiated.
const (
	// IdPCallbackSPInitiated: only sign-ins started here (/saml/{cust_id}/login);
	// a response's InResponseTo must name a request this service issued.
	IdPCallbackSPInitiated = "sp_initiated"
	// IdPCallbackIdPInitiated: those, and unsolicited responses the IdP
	// sends on its own (no InResponseTo).
	IdPCallbackIdPInitiated = "idp_initiated"
	// SSOConfigMetadata is the SSOConfigMethod that takes the IdP from
	// IdpMetadata; any other value takes it from IssuerURL, SSOEntryPoint
	// and IdpCertificate.
	SSOConfigMetadata = "metadata"
)

// Bounds of an SSO configuration's texts.
const (
	MaxIdPMetadataBytes    = 256 << 10
	MaxIdPCertificateBytes = 64 << 10
)

// validate checks the values SSOConfig's fields may take; the IdP it
// describes is parsed when someone signs in (package sso), where an
// unusable one refuses the sign-in.
func (c SSOConfig) validate() error {
	if v := c.IdpCallbackType; v != nil && *v != "" && *v != IdPCallbackSPInitiated && *v != IdPCallbackIdPInitiated {
		return Invalid("ssoConfig", "idp_callback_type must be %q, %q or empty (%q), not %q",
			IdPCallbackSPInitiated, IdPCallbackIdPInitiated, IdPCallbackSPInitiated, *v)
	}
	for _, f := range []struct {
		name string
		v    *string
		max  int
	}{
		{"idp_metadata", c.IdpMetadata, MaxIdPMetadataBytes},
		{"idp_certificate", c.IdpCertificate, MaxIdPCertificateBytes},
		{"issuer_url", c.IssuerURL, maxTextLen},
		{"sso_entry_point", c.SSOEntryPoint, maxTextLen},
		{"sso_config_method", c.SSOConfigMethod, maxNameLen},
		{"idp_callback_type", c.IdpCallbackType, maxNameLen},
	} {
		if f.v != nil && len(*f.v) > f.max {
			return Invalid("ssoConfig", "%s must have at most %d bytes, not %d", f.name, f.max, len(*f.v))
		}
	}
	return nil
}

// Authentication methods a tenant may use.
const (
	AuthSystemDefault = "system_default"
	AuthSSOSAML       = "sso_saml"
)

// TenantInput is a tenant create or patch. The REST and GraphQL edges both
// decode into it, so a tenant is validated in one place. Field names in the
// ValidationErrors it yields are the GraphQL ones (name, contactEmail, ...).
type TenantInput struct {
	Name                 Opt[string]
	Contact              Opt[string]
	ContactEmail         Opt[string]
	ContactPhone         Opt[string]
	Address              Opt[string]
	Info                 Opt[string] // any text; kept as JSON, see NormalizeInfo
	RetentionGroup       Opt[string]
	MFAEnabled           Opt[bool]
	AuthenticationMethod Opt[string]
	SSOConfig            Opt[SSOConfig] // replaces the whole object
	IngestionLimit       Opt[int64]
}

// TenantRules are the deployment's limits on tenant fields.
type TenantRules struct {
	// SaaS is the managed edition, where retention groups are unavailable.
	SaaS bool
}

// NormalizeInfo returns info as it is kept: text that is already JSON stays
// as given (so what a client read can be written back unchanged), any other
// text is stored JSON-encoded, and "" stays "". Reads therefore always give
// JSON text or "".
func NormalizeInfo(info string) string {
	if info == "" || json.Valid([]byte(info)) {
		return info
	}
	b, _ := json.Marshal(info) // a string always marshals
	return string(b)
}

// applyTo validates in and writes the fields it gives onto t; t is left
// unchanged when in is invalid.
func (in TenantInput) applyTo(t *Tenant, rules TenantRules) error {
	next := *t
	name, err := requiredName("name", in.Name)
	if err != nil {
		return err
	}
	next.Name = name
	for _, f := range []struct {
		field string
		opt   Opt[string]
		dst   *string
	}{
		{"contact", in.Contact, &next.Contact},
		{"contactPhone", in.ContactPhone, &next.ContactPhone},
		{"address", in.Address, &next.Address},
	} {
		if f.opt.Set {
			if *f.dst, err = optionalText(f.field, f.opt, maxTextLen); err != nil {
				return err
			}
		}
	}
	if in.ContactEmail.Set {
		v, err := optionalText("contactEmail", in.ContactEmail, maxNameLen)
		if err != nil {
			return err
		}
		if v != "" {
			if a, err := mail.ParseAddress(v); err != nil || a.Address != v {
				return Invalid("contactEmail", "%q is not an email address", v)
			}
		}
		next.ContactEmail = v
	}
	if in.Info.Set {
		next.Info = ""
		if !in.Info.Null {
			next.Info = NormalizeInfo(in.Info.Value)
		}
	}
	if in.RetentionGroup.Set {
		v, err := optionalText("retentionGroup", in.RetentionGroup, maxNameLen)
		if err != nil {
			return err
		}
		if v != "" && rules.SaaS {
			return Invalid("retentionGroup", "is not available on the managed (SaaS) edition")
		}
		next.RetentionGroup = v
	}
	if in.MFAEnabled.Set {
		next.MFAEnabled = !in.MFAEnabled.Null && in.MFAEnabled.Value
	}
	if in.AuthenticationMethod.Set {
		switch v := in.AuthenticationMethod.Value; {
		case in.AuthenticationMethod.Null:
			next.AuthenticationMethod = AuthSystemDefault
		case v == AuthSystemDefault || v == AuthSSOSAML:
			next.AuthenticationMethod = v
		default:
			return Invalid("authenticationMethod", "must be %q or %q, not %q", AuthSystemDefault, AuthSSOSAML, v)
		}
	}
	if in.SSOConfig.Set {
		next.SSOConfig = nil
		if !in.SSOConfig.Null {
			c := in.SSOConfig.Value
			if err := c.validate(); err != nil {
				return err
			}
			next.SSOConfig = &c
		}
	}
	if in.IngestionLimit.Set {
		next.IngestionLimit = nil
		if !in.IngestionLimit.Null {
			v := in.IngestionLimit.Value
			if v < 0 {
				return Invalid("ingestionLimit", "must not be negative, not %d", v)
			}
			next.IngestionLimit = &v
		}
	}
	*t = next
	return nil
}

// tenantQuery selects tenants with their group name and user count.
func tenantQuery(db bun.IDB, dst any) *bun.SelectQuery {
	return db.NewSelect().Model(dst).
		ColumnExpr("t.*").
		ColumnExpr("COALESCE(g.name, '') AS group_name").
		ColumnExpr("COALESCE(uc.n, 0) AS user_num").
		Join("LEFT JOIN tenant_groups AS g ON g.id = t.group_id").
		// One grouped pass over users rather than a count per tenant row,
		// since users.tenant_id has no index: listing 5,000 tenants with
		// 2,000 users took 0.7-0.9 s per-row and 25-40 ms grouped (SQLite).
		Join("LEFT JOIN (SELECT tenant_id, COUNT(*) AS n FROM users WHERE tenant_id IS NOT NULL GROUP BY tenant_id) AS uc ON uc.tenant_id = t.id")
}

func tenantIn(ctx context.Context, db bun.IDB, id string) (*Tenant, error) {
	t := new(Tenant)
	err := tenantQuery(db, t).Where("t.id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &notFoundError{"tenant", id}
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to fetch tenant %s: %w", id, err)
	}
	return t, nil
}

// Tenant returns the tenant with that id (cust_id).
//
// It is the read of every tenant GET, so its SQL is one constant text with
// the id as a driver parameter: bun writes arguments into the text, which
// made SQLite prepare the statement anew for every request (half the
// request's CPU time); a constant text is prepared once per connection
// (the SQLite statement cache, pgx's own cache). Answers are cached (see
// tenantCache): the query was most of a tenant GET's cost.
func (s *Store) Tenant(ctx context.Context, id string) (*Tenant, error) {
	now := time.Now()
	cached, ok, gen := s.tenantCache.answers.Get(id, now)
	if ok {
		return &cached, nil // a copy: callers may change it
	}
	t, err := s.readTenant(ctx, id)
	if err == nil {
		s.tenantCache.answers.Put(id, *t, gen, now)
	}
	return t, err
}

func (s *Store) readTenant(ctx context.Context, id string) (*Tenant, error) {
	s.tenantSQLOnce.Do(func() {
		mark := "?"
		if s.Dialect == Postgres {
			mark = "$1"
		}
		// One tenant counts its own users (users_tenant_idx) rather than
		// joining the grouped count of every tenant's.
		s.tenantSQL = s.reader().NewSelect().Model(new(Tenant)).
			ColumnExpr("t.*").
			ColumnExpr("COALESCE(g.name, '') AS group_name").
			ColumnExpr("(SELECT COUNT(*) FROM users AS u WHERE u.tenant_id = t.id) AS user_num").
			Join("LEFT JOIN tenant_groups AS g ON g.id = t.group_id").
			Where("t.id = ?", bun.Safe(mark)).String()
	})
	rows, err := s.readDB().QueryContext(ctx, s.tenantSQL, id)
	if err != nil {
		return nil, fmt.Errorf("store: unable to fetch tenant %s: %w", id, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: unable to fetch tenant %s: %w", id, err)
		}
		return nil, &notFoundError{"tenant", id}
	}
	t := new(Tenant)
	if err := s.DB.ScanRow(ctx, rows, t); err != nil {
		return nil, fmt.Errorf("store: unable to fetch tenant %s: %w", id, err)
	}
	return t, rows.Close()
}

// Tenants lists tenants by creation.
func (s *Store) Tenants(ctx context.Context, page Page) ([]*Tenant, error) {
	return s.listTenants(ctx, page, nil)
}

func (s *Store) listTenants(ctx context.Context, page Page, only *string) ([]*Tenant, error) {
	out := []*Tenant{}
	q := tenantQuery(s.reader(), &out).OrderExpr("t.seq ASC")
	if only != nil {
		q = q.Where("t.id = ?", *only)
	}
	if err := page.apply(q).Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to list tenants: %w", err)
	}
	return out, nil
}

// TenantsFor lists the tenants u may see: all of them for root, only its
// own for a tenant-scoped user.
func (s *Store) TenantsFor(ctx context.Context, u *User, page Page) ([]*Tenant, error) {
	if u.Scope == ScopeRoot {
		return s.Tenants(ctx, page)
	}
	own := ""
	if u.TenantID != nil {
		own = *u.TenantID
	}
	return s.listTenants(ctx, page, &own)
}

// TenantFor returns the tenant when u may see it, and ErrNotFound otherwise,
// so that a tenant-scoped user cannot probe for other tenants' ids.
func (s *Store) TenantFor(ctx context.Context, u *User, id string) (*Tenant, error) {
	if u.Scope != ScopeRoot && (u.TenantID == nil || *u.TenantID != id) {
		return nil, &notFoundError{"tenant", id}
	}
	return s.Tenant(ctx, id)
}

// TenantsOfGroup lists a group's tenants by creation.
func (s *Store) TenantsOfGroup(ctx context.Context, groupID string) ([]*Tenant, error) {
	out := []*Tenant{}
	err := tenantQuery(s.reader(), &out).Where("t.group_id = ?", groupID).OrderExpr("t.seq ASC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: unable to list tenants of group %s: %w", groupID, err)
	}
	return out, nil
}

// tenantColumns are the columns a patch may change.
var tenantColumns = []string{"name", "contact", "contact_email", "contact_phone", "address", "info",
	"retention_group", "mfa_enabled", "authentication_method", "sso_config", "ingestion_limit", "updated_at"}

// CreateTenant validates in and adds the tenant, assigning its id.
func (s *Store) CreateTenant(ctx context.Context, in TenantInput, rules TenantRules) (*Tenant, error) {
	defer s.tenantsWritten()
	t := &Tenant{AuthenticationMethod: AuthSystemDefault}
	if err := in.applyTo(t, rules); err != nil {
		return nil, err
	}
	t.ID = newOpaqueID()
	t.CreatedAt = time.Now().UTC()
	t.UpdatedAt = t.CreatedAt
	var out *Tenant
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if t.OrgID, err = orgID(ctx, tx); err != nil {
			return err
		}
		if t.Seq, err = s.nextSeq(ctx, tx, "tenants"); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(t).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to create tenant %q: %w", t.Name, err)
		}
		out, err = tenantIn(ctx, tx, t.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PatchTenant changes the fields in gives; the name is required.
func (s *Store) PatchTenant(ctx context.Context, id string, in TenantInput, rules TenantRules) (*Tenant, error) {
	defer s.tenantsWritten()
	var out *Tenant
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		t := new(Tenant)
		err := s.forUpdate(tx.NewSelect().Model(t).Where("t.id = ?", id)).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return &notFoundError{"tenant", id}
		}
		if err != nil {
			return fmt.Errorf("store: unable to fetch tenant %s: %w", id, err)
		}
		if err := in.applyTo(t, rules); err != nil {
			return err
		}
		t.UpdatedAt = time.Now().UTC()
		if _, err := tx.NewUpdate().Model(t).Column(tenantColumns...).WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to update tenant %s: %w", id, err)
		}
		out, err = tenantIn(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// errTenantMoved means a tenant changed group while being deleted.
var errTenantMoved = errors.New("store: tenant changed group during delete")

// DeleteTenant deletes the tenant. When it was the last tenant of its group,
// the group goes too, in the same transaction; its id is returned.
func (s *Store) DeleteTenant(ctx context.Context, id string) (deletedGroupID string, err error) {
	defer s.tenantsWritten()
	for attempt := 0; ; attempt++ {
		deletedGroupID, err = s.deleteTenantOnce(ctx, id)
		if !errors.Is(err, errTenantMoved) || attempt == 4 {
			return deletedGroupID, err
		}
	}
}

func (s *Store) deleteTenantOnce(ctx context.Context, id string) (deletedGroupID string, err error) {
	err = s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		deletedGroupID = ""
		var group sql.NullString
		err := tx.QueryRowContext(ctx, "SELECT group_id FROM tenants WHERE id = ?", id).Scan(&group)
		if errors.Is(err, sql.ErrNoRows) {
			return &notFoundError{"tenant", id}
		}
		if err != nil {
			return fmt.Errorf("store: unable to fetch tenant %s: %w", id, err)
		}
		lock := ""
		if s.Dialect == Postgres {
			lock = " FOR UPDATE"
		}
		if group.Valid {
			// The group's row lock orders this delete with the group's
			// patches and with deletes of its other tenants, so that the
			// last one out sees the group empty.
			var gid string
			err := tx.QueryRowContext(ctx, "SELECT id FROM tenant_groups WHERE id = ?"+lock, group.String).Scan(&gid)
			if errors.Is(err, sql.ErrNoRows) {
				return errTenantMoved
			}
			if err != nil {
				return fmt.Errorf("store: unable to lock tenant group %s: %w", group.String, err)
			}
		}
		var now sql.NullString
		err = tx.QueryRowContext(ctx, "SELECT group_id FROM tenants WHERE id = ?"+lock, id).Scan(&now)
		if errors.Is(err, sql.ErrNoRows) {
			return &notFoundError{"tenant", id}
		}
		if err != nil {
			return fmt.Errorf("store: unable to fetch tenant %s: %w", id, err)
		}
		if now != group {
			return errTenantMoved
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM tenants WHERE id = ?", id); err != nil {
			return fmt.Errorf("store: unable to delete tenant %s: %w", id, err)
		}
		if !group.Valid {
			return nil
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM tenant_groups WHERE id = ?
			AND NOT EXISTS (SELECT 1 FROM tenants WHERE group_id = ?)`, group.String, group.String)
		if err != nil {
			return fmt.Errorf("store: unable to delete emptied tenant group %s: %w", group.String, err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			deletedGroupID = group.String
			return nil
		}
		_, err = tx.ExecContext(ctx, "UPDATE tenant_groups SET updated_at = ? WHERE id = ?", time.Now().UTC(), group.String)
		if err != nil {
			return fmt.Errorf("store: unable to touch tenant group %s: %w", group.String, err)
		}
		return nil
	})
	return deletedGroupID, err
}
