package store

import (
	"time"

	"github.com/uptrace/bun"
)

// Tenant is an organisational customer of an MSSP.
type Tenant struct {
	bun.BaseModel `bun:"table:tenants"`

	ID                   string     `bun:"id,pk"`
	Seq                  int64      `bun:"seq,notnull"` // creation order, for stable listing
	Name                 string     `bun:"name,notnull"`
	Contact              string     `bun:"contact,notnull"`
	ContactEmail         string     `bun:"contact_email,notnull"`
	ContactPhone         string     `bun:"contact_phone,notnull"`
	Address              string     `bun:"address,notnull"`
	Info                 string     `bun:"info,notnull"`
	RetentionGroup       string     `bun:"retention_group,notnull"`
	MFAEnabled           bool       `bun:"mfa_enabled,notnull"`
	AuthenticationMethod string     `bun:"authentication_method,notnull"`
	SSOConfig            *SSOConfig `bun:"sso_config,type:json"`
	IngestionLimit       *int64     `bun:"ingestion_limit"`
	OrgID                string     `bun:"org_id,notnull"`
	GroupID              *string    `bun:"group_id"`
	GroupName            string     `bun:"group_name,scanonly"`
	DSNum                int        `bun:"ds_num,notnull"`
	UserNum              int        `bun:"user_num,notnull"`
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
	bun.BaseModel `bun:"table:tenant_groups"`

	ID        string    `bun:"id,pk"`
	Name      string    `bun:"name,notnull"`
	Logo      string    `bun:"logo,notnull"`
	OrgID     string    `bun:"org_id,notnull"`
	TenantIDs []string  `bun:"-"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}
