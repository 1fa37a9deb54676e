package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"strings"
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

// TenantGroup is a named container of tenants.
type TenantGroup struct {
	bun.BaseModel `bun:"table:tenant_groups,alias:g"`

	ID        string    `bun:"id,pk"`
	Seq       int64     `bun:"seq,notnull"` // creation order, for stable listing
	Name      string    `bun:"name,notnull"`
	Logo      string    `bun:"logo,notnull"`
	OrgID     string    `bun:"org_id,notnull"`
	TenantIDs []string  `bun:"-"` // members, by tenant creation order
	CreatedAt time.Time `bun:"created_at,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}

// Authentication methods a tenant may use.
const (
	AuthSystemDefault = "system_default"
	AuthSSOSAML       = "sso_saml"
)

const (
	maxNameLen = 255
	maxTextLen = 4096
)

// Opt is one field of a create or patch input. Set says the caller gave the
// field; Null that it was given as null, which resets it to its default.
type Opt[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// Some returns a field given with a value.
func Some[T any](v T) Opt[T] { return Opt[T]{Set: true, Value: v} }

// Null returns a field given as null.
func Null[T any]() Opt[T] { return Opt[T]{Set: true, Null: true} }

// FromPtr returns the field of an input where nil means "not given", as in
// GraphQL input objects.
func FromPtr[T any](p *T) Opt[T] {
	if p == nil {
		return Opt[T]{}
	}
	return Some(*p)
}

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

// TenantGroupInput is a tenant group create or patch, shared by REST and
// GraphQL. A given Tenants replaces the membership.
type TenantGroupInput struct {
	Name    Opt[string]
	Tenants Opt[[]string]
	Logo    Opt[string]
}

// Page selects part of a list sorted by creation. Limit 0 means no limit.
type Page struct {
	Limit, Offset int
}

// NewPage checks optional limit and offset: limit at least 1, offset not
// negative; neither given means the whole list.
func NewPage(limit, offset *int) (Page, error) {
	var p Page
	if limit != nil {
		if *limit < 1 {
			return p, Invalid("limit", "must be at least 1, not %d", *limit)
		}
		p.Limit = *limit
	}
	if offset != nil {
		if *offset < 0 {
			return p, Invalid("offset", "must not be negative, not %d", *offset)
		}
		p.Offset = *offset
	}
	return p, nil
}

func (p Page) apply(q *bun.SelectQuery) *bun.SelectQuery {
	if p.Limit > 0 {
		q = q.Limit(int64(p.Limit))
	} else if p.Offset > 0 {
		q = q.Limit(math.MaxInt64) // SQLite accepts OFFSET only after a LIMIT
	}
	if p.Offset > 0 {
		q = q.Offset(int64(p.Offset))
	}
	return q
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

// conflictError is an ErrConflict with a message fit for API callers.
type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }
func (e *conflictError) Unwrap() error { return ErrConflict }

func conflict(format string, args ...any) error {
	return &conflictError{msg: fmt.Sprintf(format, args...)}
}

// notFoundError is an ErrNotFound naming what was not found.
type notFoundError struct{ what, id string }

func (e *notFoundError) Error() string { return fmt.Sprintf("%s %q not found", e.what, e.id) }
func (e *notFoundError) Unwrap() error { return ErrNotFound }

// newOpaqueID returns 128 random bits in hex: unguessable, fixed length,
// safe in a URL path without escaping, and revealing no order or count.
func newOpaqueID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("store: crypto/rand failed: " + err.Error()) // unrecoverable on any supported OS
	}
	return hex.EncodeToString(b)
}

func requiredName(field string, o Opt[string]) (string, error) {
	if !o.Set || o.Null {
		return "", Invalid(field, "is required")
	}
	v := strings.TrimSpace(o.Value)
	if v == "" {
		return "", Invalid(field, "must not be empty")
	}
	if n := len([]rune(v)); n > maxNameLen {
		return "", Invalid(field, "must have at most %d characters, not %d", maxNameLen, n)
	}
	return v, nil
}

func optionalText(field string, o Opt[string], max int) (string, error) {
	if o.Null {
		return "", nil
	}
	v := strings.TrimSpace(o.Value)
	if n := len([]rune(v)); max > 0 && n > max {
		return "", Invalid(field, "must have at most %d characters, not %d", max, n)
	}
	return v, nil
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

// validate checks a group input and returns its name and deduplicated
// tenant ids (nil when tenants were not given and not required).
func (in TenantGroupInput) validate(create bool) (name string, ids []string, err error) {
	if name, err = requiredName("name", in.Name); err != nil {
		return "", nil, err
	}
	if in.Logo.Set && !in.Logo.Null && len(in.Logo.Value) > 256<<10 {
		return "", nil, Invalid("logo", "must have at most 256 KiB")
	}
	switch {
	case !in.Tenants.Set && !create:
		return name, nil, nil
	case !in.Tenants.Set:
		return "", nil, Invalid("tenants", "is required: a group needs at least one tenant id")
	case in.Tenants.Null || len(in.Tenants.Value) == 0:
		return "", nil, Invalid("tenants", "must hold at least one tenant id")
	}
	seen := make(map[string]bool, len(in.Tenants.Value))
	for _, id := range in.Tenants.Value {
		if strings.TrimSpace(id) == "" {
			return "", nil, Invalid("tenants", "must not hold an empty tenant id")
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return name, ids, nil
}

// forUpdate locks the selected rows on PostgreSQL. SQLite needs no row
// locks: its write transactions take the database lock at BEGIN.
func (s *Store) forUpdate(q *bun.SelectQuery) *bun.SelectQuery {
	if s.Dialect == Postgres {
		return q.For("UPDATE")
	}
	return q
}

// nextSeq returns the next creation number of table (tenants or
// tenant_groups): a sequence on PostgreSQL, MAX+1 under SQLite's single
// writer.
func (s *Store) nextSeq(ctx context.Context, db bun.IDB, table string) (int64, error) {
	q := "SELECT COALESCE(MAX(seq), 0) + 1 FROM " + table
	if s.Dialect == Postgres {
		q = "SELECT nextval('" + table + "_seq')"
	}
	var n int64
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: unable to number a new row of %s: %w", table, err)
	}
	return n, nil
}

// OrgID returns the installation's organisation id.
func (s *Store) OrgID(ctx context.Context) (string, error) {
	return orgID(ctx, s.DB)
}

func orgID(ctx context.Context, db bun.IDB) (string, error) {
	var id string
	if err := db.QueryRowContext(ctx, "SELECT id FROM organisation").Scan(&id); err != nil {
		return "", fmt.Errorf("store: unable to read the organisation id: %w", err)
	}
	return id, nil
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
		s.tenantSQL = s.DB.NewSelect().Model(new(Tenant)).
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
	q := tenantQuery(s.DB, &out).OrderExpr("t.seq ASC")
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
	err := tenantQuery(s.DB, &out).Where("t.group_id = ?", groupID).OrderExpr("t.seq ASC").Scan(ctx)
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

func groupIn(ctx context.Context, db bun.IDB, id string) (*TenantGroup, error) {
	g := new(TenantGroup)
	err := db.NewSelect().Model(g).Where("g.id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &notFoundError{"tenant group", id}
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to fetch tenant group %s: %w", id, err)
	}
	if err := loadMembers(ctx, db, []*TenantGroup{g}); err != nil {
		return nil, err
	}
	return g, nil
}

// loadMembers fills TenantIDs of groups in one query.
func loadMembers(ctx context.Context, db bun.IDB, groups []*TenantGroup) error {
	if len(groups) == 0 {
		return nil
	}
	byID := make(map[string]*TenantGroup, len(groups))
	ids := make([]string, 0, len(groups))
	for _, g := range groups {
		g.TenantIDs = []string{}
		byID[g.ID] = g
		ids = append(ids, g.ID)
	}
	var rows []struct {
		ID      string `bun:"id"`
		GroupID string `bun:"group_id"`
	}
	err := db.NewSelect().TableExpr("tenants").Column("id", "group_id").
		Where("group_id IN (?)", bun.In(ids)).OrderExpr("seq ASC").Scan(ctx, &rows)
	if err != nil {
		return fmt.Errorf("store: unable to list tenant group members: %w", err)
	}
	for _, r := range rows {
		g := byID[r.GroupID]
		g.TenantIDs = append(g.TenantIDs, r.ID)
	}
	return nil
}

// TenantGroup returns the group with that id (tgrp_id) and its members.
func (s *Store) TenantGroup(ctx context.Context, id string) (*TenantGroup, error) {
	return groupIn(ctx, s.DB, id)
}

// TenantGroups lists groups by creation, with their members.
func (s *Store) TenantGroups(ctx context.Context, page Page) ([]*TenantGroup, error) {
	out := []*TenantGroup{}
	if err := page.apply(s.DB.NewSelect().Model(&out).OrderExpr("g.seq ASC")).Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to list tenant groups: %w", err)
	}
	if err := loadMembers(ctx, s.DB, out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkGroupName refuses a name another group has.
func checkGroupName(ctx context.Context, db bun.IDB, name, self string) error {
	n, err := db.NewSelect().Model((*TenantGroup)(nil)).Where("g.name = ? AND g.id <> ?", name, self).Count(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to check tenant group names: %w", err)
	}
	if n > 0 {
		return conflict("a tenant group named %q exists", name)
	}
	return nil
}

// checkMembers explains why ids cannot all join group: an unknown id is a
// ValidationError, a tenant of another group a conflict naming the tenant
// and that group.
func checkMembers(ctx context.Context, db bun.IDB, groupID string, ids []string) error {
	var rows []struct {
		ID        string         `bun:"id"`
		Name      string         `bun:"name"`
		GroupID   sql.NullString `bun:"group_id"`
		GroupName sql.NullString `bun:"group_name"`
	}
	err := db.NewSelect().TableExpr("tenants AS t").
		ColumnExpr("t.id, t.name, t.group_id, g.name AS group_name").
		Join("LEFT JOIN tenant_groups AS g ON g.id = t.group_id").
		Where("t.id IN (?)", bun.In(ids)).Scan(ctx, &rows)
	if err != nil {
		return fmt.Errorf("store: unable to look up tenants: %w", err)
	}
	found := make(map[string]int, len(rows))
	for i, r := range rows {
		found[r.ID] = i
	}
	for _, id := range ids {
		if _, ok := found[id]; !ok {
			return Invalid("tenants", "no tenant has id %q", id)
		}
	}
	for _, id := range ids {
		r := rows[found[id]]
		if r.GroupID.Valid && r.GroupID.String != groupID {
			// Named as the dashboard shows them: ids mean nothing to whoever reads this.
			return conflict("tenant %q is already in the group %q, and a tenant belongs to one group at most: remove it from %q first",
				r.Name, r.GroupName.String, r.GroupName.String)
		}
	}
	return nil
}

// setMembers makes ids the members of group. With replace, tenants not in
// ids leave the group.
func setMembers(ctx context.Context, tx bun.Tx, groupID string, ids []string, replace bool) error {
	if err := checkMembers(ctx, tx, groupID, ids); err != nil {
		return err
	}
	if replace {
		_, err := tx.NewUpdate().Table("tenants").Set("group_id = NULL").
			Where("group_id = ? AND id NOT IN (?)", groupID, bun.In(ids)).Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to remove tenants from group %s: %w", groupID, err)
		}
	}
	// The condition re-checks each row under its lock: a tenant that another
	// group took since checkMembers is left alone and counted missing.
	res, err := tx.NewUpdate().Table("tenants").Set("group_id = ?", groupID).
		Where("id IN (?) AND (group_id IS NULL OR group_id = ?)", bun.In(ids), groupID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to add tenants to group %s: %w", groupID, err)
	}
	if n, _ := res.RowsAffected(); int(n) != len(ids) {
		if err := checkMembers(ctx, tx, groupID, ids); err != nil {
			return err
		}
		return conflict("the tenants changed while being added to the group; retry")
	}
	return nil
}

// CreateTenantGroup validates in and adds the group with its tenants.
func (s *Store) CreateTenantGroup(ctx context.Context, in TenantGroupInput) (*TenantGroup, error) {
	defer s.tenantsWritten()
	name, ids, err := in.validate(true)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	g := &TenantGroup{ID: newOpaqueID(), Name: name, CreatedAt: now, UpdatedAt: now}
	if in.Logo.Set && !in.Logo.Null {
		g.Logo = in.Logo.Value
	}
	var out *TenantGroup
	err = s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if err := checkGroupName(ctx, tx, name, g.ID); err != nil {
			return err
		}
		if g.OrgID, err = orgID(ctx, tx); err != nil {
			return err
		}
		if g.Seq, err = s.nextSeq(ctx, tx, "tenant_groups"); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(g).Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return conflict("a tenant group named %q exists", name)
			}
			return fmt.Errorf("store: unable to create tenant group %q: %w", name, err)
		}
		if err := setMembers(ctx, tx, g.ID, ids, false); err != nil {
			return err
		}
		out, err = groupIn(ctx, tx, g.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lockGroup reads a group for change, locking its row on PostgreSQL.
func (s *Store) lockGroup(ctx context.Context, tx bun.Tx, id string) (*TenantGroup, error) {
	g := new(TenantGroup)
	err := s.forUpdate(tx.NewSelect().Model(g).Where("g.id = ?", id)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &notFoundError{"tenant group", id}
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to fetch tenant group %s: %w", id, err)
	}
	return g, nil
}

// PatchTenantGroup renames the group and changes the fields in gives; a
// given Tenants replaces the membership.
func (s *Store) PatchTenantGroup(ctx context.Context, id string, in TenantGroupInput) (*TenantGroup, error) {
	defer s.tenantsWritten()
	var out *TenantGroup
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		g, err := s.lockGroup(ctx, tx, id)
		if err != nil {
			return err
		}
		name, ids, err := in.validate(false)
		if err != nil {
			return err
		}
		if err := checkGroupName(ctx, tx, name, id); err != nil {
			return err
		}
		g.Name = name
		if in.Logo.Set {
			g.Logo = ""
			if !in.Logo.Null {
				g.Logo = in.Logo.Value
			}
		}
		if ids != nil {
			if err := setMembers(ctx, tx, id, ids, true); err != nil {
				return err
			}
		}
		g.UpdatedAt = time.Now().UTC()
		if _, err := tx.NewUpdate().Model(g).Column("name", "logo", "updated_at").WherePK().Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return conflict("a tenant group named %q exists", name)
			}
			return fmt.Errorf("store: unable to update tenant group %s: %w", id, err)
		}
		out, err = groupIn(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteTenantGroup deletes the group only: its tenants remain, ungrouped.
func (s *Store) DeleteTenantGroup(ctx context.Context, id string) error {
	defer s.tenantsWritten()
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := s.lockGroup(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Table("tenants").Set("group_id = NULL").Where("group_id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to ungroup the tenants of group %s: %w", id, err)
		}
		if _, err := tx.NewDelete().Model((*TenantGroup)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to delete tenant group %s: %w", id, err)
		}
		return nil
	})
}
