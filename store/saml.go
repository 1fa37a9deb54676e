package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// SAML sign-in state (package sso uses it): the AuthnRequests issued, kept
// until they expire so that any instance can take the answer to a request
// another issued, and the assertions used, so each is used once whatever
// instance receives it.

// MaxPendingSAMLRequests bounds the unexpired sign-ins one tenant may have
// in flight: a request is stored for every anonymous GET of its login URL.
const MaxPendingSAMLRequests = 10_000

// ErrSAMLBusy refuses a sign-in start past MaxPendingSAMLRequests.
var ErrSAMLBusy = errors.New("too many SSO sign-ins in progress for this organisation; retry in a few minutes")

// ErrSAMLReplayed is an assertion (or a request's answer) already used.
var ErrSAMLReplayed = errors.New("this SSO answer was already used")

// ErrSSONameTaken refuses a just-in-time sign-in whose name belongs to a
// root user or to another tenant's user.
var ErrSSONameTaken = errors.New("the name is held by a user who is not of this organisation")

// ErrSSOUserDisabled refuses the sign-in of a disabled user.
var ErrSSOUserDisabled = errors.New("the user is disabled")

// samlRequest is an AuthnRequest this service issued.
type samlRequest struct {
	bun.BaseModel `bun:"table:saml_requests"`

	ID        string    `bun:"id,pk"`
	TenantID  string    `bun:"tenant_id,notnull"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

// samlAssertion is an assertion accepted once.
type samlAssertion struct {
	bun.BaseModel `bun:"table:saml_assertions"`

	TenantID    string    `bun:"tenant_id,pk"`
	AssertionID string    `bun:"assertion_id,pk"`
	ExpiresAt   time.Time `bun:"expires_at,notnull"`
}

// SaveSAMLRequest keeps the id of an AuthnRequest issued for the tenant
// until expires. Expired requests (everyone's) are deleted first; a tenant
// with MaxPendingSAMLRequests live ones gets ErrSAMLBusy.
func (s *Store) SaveSAMLRequest(ctx context.Context, tenantID, id string, expires time.Time) error {
	now := time.Now().UTC()
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*samlRequest)(nil)).Where("expires_at <= ?", now).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to sweep expired SAML requests: %w", err)
		}
		n, err := tx.NewSelect().Model((*samlRequest)(nil)).Where("tenant_id = ?", tenantID).Count(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to count SAML requests: %w", err)
		}
		if n >= MaxPendingSAMLRequests {
			return ErrSAMLBusy
		}
		r := &samlRequest{ID: id, TenantID: tenantID, ExpiresAt: expires.UTC()}
		if _, err := tx.NewInsert().Model(r).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to save a SAML request: %w", err)
		}
		return nil
	})
}

// TakeSAMLRequest marks the request answered (deletes it); a request
// already taken, expired or unknown is ErrSAMLReplayed. Of two instances
// taking one request at once, one wins.
func (s *Store) TakeSAMLRequest(ctx context.Context, tenantID, id string) error {
	res, err := s.DB.NewDelete().Model((*samlRequest)(nil)).
		Where("id = ? AND tenant_id = ? AND expires_at > ?", id, tenantID, time.Now().UTC()).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to take a SAML request: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrSAMLReplayed
	}
	return nil
}

// UseSAMLAssertion records the assertion as used until expires; one used
// already is ErrSAMLReplayed. Expired records (everyone's) are deleted
// first: past its expiry an assertion is refused anyway.
func (s *Store) UseSAMLAssertion(ctx context.Context, tenantID, assertionID string, expires time.Time) error {
	now := time.Now().UTC()
	if _, err := s.DB.NewDelete().Model((*samlAssertion)(nil)).Where("expires_at <= ?", now).Exec(ctx); err != nil {
		return fmt.Errorf("store: unable to sweep used SAML assertions: %w", err)
	}
	a := &samlAssertion{TenantID: tenantID, AssertionID: assertionID, ExpiresAt: expires.UTC()}
	if _, err := s.DB.NewInsert().Model(a).Exec(ctx); err != nil {
		if isUniqueViolation(err) {
			return ErrSAMLReplayed
		}
		return fmt.Errorf("store: unable to record a SAML assertion: %w", err)
	}
	return nil
}

// unusablePassword is the password hash of a user created by SSO: no
// bcrypt hash has this form, so no password matches it.
const unusablePassword = "!sso"

// SSOUser returns the user an SSO assertion of the tenant names: the
// tenant's own user of that name (ErrSSOUserDisabled when disabled), or a
// new tenant user created just in time with no usable password (created
// true). A name held by a root user or another tenant's user is
// ErrSSONameTaken; a name the username rules refuse is a ValidationError.
func (s *Store) SSOUser(ctx context.Context, tenantID, username string) (u *User, created bool, err error) {
	if err := checkUsername(username); err != nil {
		return nil, false, err
	}
	if strings.TrimSpace(username) != username {
		return nil, false, Invalid("username", "must not start or end with spaces")
	}
	for attempt := 0; ; attempt++ {
		u, err = s.UserByName(ctx, username)
		switch {
		case err == nil:
			if u.Scope != ScopeTenant || u.TenantID == nil || *u.TenantID != tenantID {
				return nil, false, ErrSSONameTaken
			}
			if !u.Enabled {
				return nil, false, ErrSSOUserDisabled
			}
			return u, false, nil
		case !errors.Is(err, ErrNotFound):
			return nil, false, err
		}
		tid := tenantID
		u = &User{Username: username, PasswordHash: unusablePassword, Scope: ScopeTenant, TenantID: &tid,
			CreatedAt: time.Now().UTC(), Enabled: true}
		_, err = s.DB.NewInsert().Model(u).Exec(ctx)
		if err == nil {
			s.tenantsWritten() // the tenant's user_num
			return u, true, nil
		}
		if !isUniqueViolation(err) || attempt > 0 {
			return nil, false, fmt.Errorf("store: unable to create SSO user %q: %w", username, err)
		}
		// Another sign-in created it meanwhile: read it again.
	}
}
