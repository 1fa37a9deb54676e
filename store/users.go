package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/uptrace/bun"
	"golang.org/x/crypto/bcrypt"
)

// Scope is what a user may do.
type Scope string

const (
	// ScopeRoot may do everything; feed management needs it.
	ScopeRoot Scope = "root"
	// ScopeTenant is bound to one tenant: read-only on IoCs and its tenant.
	ScopeTenant Scope = "tenant"
)

// User is a person or a program that signs in.
type User struct {
	bun.BaseModel `bun:"table:users"`

	ID           int64     `bun:"id,pk,autoincrement"`
	Username     string    `bun:"username,notnull"`
	PasswordHash string    `bun:"password_hash,notnull"`
	Scope        Scope     `bun:"scope,notnull"`
	TenantID     *string   `bun:"tenant_id"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
	// Enabled false refuses every credential of the user.
	Enabled bool `bun:"enabled,notnull"`
	// MustChangePassword is set when root reset the password: a session of
	// the user can do nothing but choose a new one (auth.UserFrom).
	MustChangePassword bool       `bun:"must_change_password,notnull"`
	LastSignInAt       *time.Time `bun:"last_sign_in_at"`
	// MFAEnabled: a password sign-in also needs a TOTP code (store/mfa.go;
	// the secret itself is never part of this model).
	MFAEnabled bool `bun:"mfa_enabled,notnull"`
}

// APIKey is a secret a user sends as the password of HTTP basic auth. Only
// its SHA-256 is stored: keys are 32 random bytes, so a slow hash adds nothing.
type APIKey struct {
	bun.BaseModel `bun:"table:api_keys"`

	ID         int64      `bun:"id,pk,autoincrement"`
	UserID     int64      `bun:"user_id,notnull"`
	Name       string     `bun:"name,notnull"`
	Prefix     string     `bun:"prefix,notnull"`
	Hash       string     `bun:"hash,notnull"`
	CreatedAt  time.Time  `bun:"created_at,notnull"`
	LastUsedAt *time.Time `bun:"last_used_at"`
	RevokedAt  *time.Time `bun:"revoked_at"`
}

// Session is a signed-in browser, found by the hash of its cookie.
type Session struct {
	bun.BaseModel `bun:"table:sessions"`

	TokenHash string    `bun:"token_hash,pk"`
	UserID    int64     `bun:"user_id,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

// ErrBadCredentials is returned for an unknown user, a wrong password or
// key, or a revoked key: callers must not tell these apart.
var ErrBadCredentials = errors.New("invalid credentials")

// apiKeyPrefix marks tifeeds keys so that leaked ones are easy to grep for.
const apiKeyPrefix = "tif_"

// NewSecret returns n random bytes, URL-safe base64 encoded.
func NewSecret(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("store: crypto/rand failed: " + err.Error()) // unrecoverable on any supported OS
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateUser adds a user with the given password. A taken username is
// ErrConflict.
func (s *Store) CreateUser(ctx context.Context, username, password string, scope Scope, tenantID *string) (*User, error) {
	username = strings.TrimSpace(username)
	if err := checkUsername(username); err != nil {
		return nil, err
	}
	if err := ValidatePassword(password); err != nil {
		return nil, err
	}
	if scope != ScopeRoot && scope != ScopeTenant {
		return nil, Invalid("scope", "unknown scope %q", scope)
	}
	if scope == ScopeTenant && (tenantID == nil || *tenantID == "") {
		return nil, Invalid("tenantId", "a tenant-scoped user needs a tenant")
	}
	if scope == ScopeRoot && tenantID != nil {
		return nil, Invalid("tenantId", "a root user has no tenant")
	}
	if scope == ScopeTenant {
		// A user of a tenant that does not exist could never sign in (see
		// liveUser); refuse it here rather than create a dead account.
		n, err := s.reader().NewSelect().Table("tenants").Where("id = ?", *tenantID).Count(ctx)
		if err != nil {
			return nil, fmt.Errorf("store: unable to check tenant %q: %w", *tenantID, err)
		}
		if n == 0 {
			return nil, Invalid("tenantId", "no tenant has id %q", *tenantID)
		}
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return nil, fmt.Errorf("store: unable to hash password: %w", err)
	}
	u := &User{Username: username, PasswordHash: string(hash), Scope: scope, TenantID: tenantID, CreatedAt: time.Now().UTC(), Enabled: true}
	if tenantID != nil {
		defer s.tenantsWritten() // the tenant's user_num
	}
	if _, err := s.DB.NewInsert().Model(u).Exec(ctx); err != nil {
		if isUniqueViolation(err) {
			return nil, fmt.Errorf("store: user %q exists: %w", username, ErrConflict)
		}
		return nil, fmt.Errorf("store: unable to create user %q: %w", username, err)
	}
	return u, nil
}

// UserByName returns the user with that username.
func (s *Store) UserByName(ctx context.Context, username string) (*User, error) {
	u := new(User)
	err := s.reader().NewSelect().Model(u).Where("username = ?", username).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to fetch user %q: %w", username, err)
	}
	return u, nil
}

// UserByID returns the user with that id.
func (s *Store) UserByID(ctx context.Context, id int64) (*User, error) {
	u := new(User)
	err := s.reader().NewSelect().Model(u).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to fetch user %d: %w", id, err)
	}
	return u, nil
}

// CountUsers returns how many users exist.
func (s *Store) CountUsers(ctx context.Context) (int64, error) {
	n, err := s.reader().NewSelect().Model((*User)(nil)).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("store: unable to count users: %w", err)
	}
	return n, nil
}

// dummyHash keeps a password check for an unknown user as slow as for a
// known one, so response times do not reveal which usernames exist.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("tifeeds-no-such-user"), bcrypt.DefaultCost)

// CheckPassword returns the user when the password is theirs.
func (s *Store) CheckPassword(ctx context.Context, username, password string) (*User, error) {
	u, err := s.liveUser(ctx, "username = ?", username)
	if errors.Is(err, ErrBadCredentials) {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return nil, ErrBadCredentials
	}
	if err != nil {
		return nil, err
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return nil, ErrBadCredentials
	}
	return u, nil
}

// Limits on what one user may accumulate.
const (
	// MaxAPIKeyNameLength keeps key names displayable.
	MaxAPIKeyNameLength = 64
	// MaxLiveAPIKeys is how many unrevoked keys one user may hold.
	MaxLiveAPIKeys = 25
	// maxRevokedAPIKeys is how many revoked keys stay listed per user;
	// older ones are deleted as new keys are made.
	maxRevokedAPIKeys = 50
	// MaxSessions is how many live sessions one user may hold; a new login
	// past it ends the oldest.
	MaxSessions = 10
)

// CreateAPIKey issues a new key for the user and returns it in clear: this is
// the only time it is available. A non-empty plain is stored as given (the
// admin's key from TIFEEDS_ADMIN_API_KEY). A user holds at most
// MaxLiveAPIKeys live keys.
func (s *Store) CreateAPIKey(ctx context.Context, userID int64, name, plain string) (*APIKey, string, error) {
	if plain == "" {
		plain = apiKeyPrefix + NewSecret(32)
	} else if len(plain) < 16 {
		return nil, "", errors.New("store: an API key must have at least 16 characters")
	}
	name = strings.TrimSpace(name)
	if name == "" {
		name = "default"
	}
	if n := len([]rune(name)); n > MaxAPIKeyNameLength {
		return nil, "", Invalid("name", "must have at most %d characters, not %d", MaxAPIKeyNameLength, n)
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return nil, "", Invalid("name", "must not contain control characters")
	}
	k := &APIKey{
		UserID:    userID,
		Name:      name,
		Prefix:    keyPrefix(plain),
		Hash:      hashToken(plain),
		CreatedAt: time.Now().UTC(),
	}
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// The user's row lock makes count-then-insert exact on PostgreSQL;
		// SQLite's single writer already does.
		if err := s.lockUser(ctx, tx, userID); err != nil {
			return err
		}
		live, err := tx.NewSelect().Model((*APIKey)(nil)).Where("user_id = ? AND revoked_at IS NULL", userID).Count(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to count API keys of user %d: %w", userID, err)
		}
		if live >= MaxLiveAPIKeys {
			return Invalid("name", "user already has %d live API keys, the limit; revoke one first", live)
		}
		_, err = tx.NewDelete().Model((*APIKey)(nil)).
			Where("user_id = ? AND revoked_at IS NOT NULL", userID).
			Where("id NOT IN (?)", tx.NewSelect().Model((*APIKey)(nil)).Column("id").
				Where("user_id = ? AND revoked_at IS NOT NULL", userID).Order("id DESC").Limit(maxRevokedAPIKeys-1)).
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to delete old revoked API keys of user %d: %w", userID, err)
		}
		if _, err := tx.NewInsert().Model(k).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to create API key for user %d: %w", userID, err)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return k, plain, nil
}

// lockUser locks the user's row until the transaction ends (PostgreSQL).
func (s *Store) lockUser(ctx context.Context, tx bun.Tx, userID int64) error {
	if s.Dialect != Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "SELECT id FROM users WHERE id = ? FOR UPDATE", userID); err != nil {
		return fmt.Errorf("store: unable to lock user %d: %w", userID, err)
	}
	return nil
}

func keyPrefix(plain string) string {
	if len(plain) > 8 {
		return plain[:8]
	}
	return plain
}

// APIKeys lists the user's keys, newest first.
func (s *Store) APIKeys(ctx context.Context, userID int64) ([]APIKey, error) {
	var keys []APIKey
	err := s.reader().NewSelect().Model(&keys).Where("user_id = ?", userID).Order("id DESC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: unable to list API keys of user %d: %w", userID, err)
	}
	return keys, nil
}

// RevokeAPIKey stops a key from working. It stays listed.
func (s *Store) RevokeAPIKey(ctx context.Context, userID, keyID int64) error {
	res, err := s.DB.NewUpdate().Model((*APIKey)(nil)).
		Set("revoked_at = ?", time.Now().UTC()).
		Where("id = ? AND user_id = ? AND revoked_at IS NULL", keyID, userID).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to revoke API key %d: %w", keyID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// CheckAPIKey returns the user when key is one of their live keys.
func (s *Store) CheckAPIKey(ctx context.Context, username, key string) (*User, error) {
	u, _, err := s.AuthenticateAPIKey(ctx, username, key)
	return u, err
}

// AuthenticateAPIKey returns the user when key is one of their live keys,
// with the credential it makes. Every live key of the user is compared in
// constant time.
func (s *Store) AuthenticateAPIKey(ctx context.Context, username, key string) (*User, Credential, error) {
	u, err := s.liveUser(ctx, "username = ?", username)
	if err != nil {
		return nil, Credential{}, err
	}
	var keys []APIKey
	err = s.reader().NewSelect().Model(&keys).
		Where("user_id = ? AND revoked_at IS NULL", u.ID).Scan(ctx)
	if err != nil {
		return nil, Credential{}, fmt.Errorf("store: unable to fetch API keys of %q: %w", username, err)
	}
	want := []byte(hashToken(key))
	var match int64
	for _, k := range keys {
		if subtle.ConstantTimeCompare(want, []byte(k.Hash)) == 1 {
			match = k.ID
		}
	}
	if match == 0 {
		return nil, Credential{}, ErrBadCredentials
	}
	// In memory, written in batches (keyuse.go): a read writes nothing.
	s.RecordKeyUse(match, time.Now())
	// The forced password change binds sessions only: keys keep working.
	u.MustChangePassword = false
	return u, credentialOf(u, match, ""), nil
}

// Credential is what authenticated a caller: one API key or one session.
// A websocket keeps it to check, before each operation, that it still holds
// (CheckCredential), and to be found when it is revoked.
type Credential struct {
	UserID   int64
	TenantID string // empty for root
	APIKeyID int64  // set for an API key
	// SessionHash is the SHA-256 of the session's token, never the token.
	SessionHash string
}

func credentialOf(u *User, keyID int64, sessionHash string) Credential {
	c := Credential{UserID: u.ID, APIKeyID: keyID, SessionHash: sessionHash}
	if u.TenantID != nil {
		c.TenantID = *u.TenantID
	}
	return c
}

// liveUserCond holds for a root user, and for a tenant-scoped user whose
// tenant exists: deleting a tenant ends its users' access at once. Tenant
// ids are random and never reused, so a later tenant cannot revive them.
//
// A disabled user is not live: every check (password, session, API key,
// socket re-check) goes through this condition.
const liveUserCond = `?TableAlias.enabled AND (?TableAlias.scope = 'root' OR EXISTS
	(SELECT 1 FROM tenants AS live_tenant WHERE live_tenant.id = ?TableAlias.tenant_id))`

// liveUser returns the one user matching where who may sign in, or
// ErrBadCredentials: an unknown user and one whose tenant is gone look the
// same to the caller.
func (s *Store) liveUser(ctx context.Context, where string, args ...any) (*User, error) {
	u := new(User)
	err := s.reader().NewSelect().Model(u).Where(where, args...).Where(liveUserCond).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrBadCredentials
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to fetch user: %w", err)
	}
	return u, nil
}

// CheckCredential returns the credential's user when the credential still
// holds: the key is not revoked (or the session not ended or expired), and
// the user and their tenant exist. It is one indexed query.
func (s *Store) CheckCredential(ctx context.Context, c Credential) (*User, error) {
	var u *User
	var err error
	switch {
	case c.APIKeyID != 0:
		u, err = s.liveUser(ctx, "?TableAlias.id = (SELECT user_id FROM api_keys WHERE id = ? AND revoked_at IS NULL)", c.APIKeyID)
	case c.SessionHash != "":
		u, err = s.liveUser(ctx, "?TableAlias.id = (SELECT user_id FROM sessions WHERE token_hash = ? AND expires_at > ?)",
			c.SessionHash, time.Now().UTC())
	default:
		return nil, ErrBadCredentials
	}
	if err != nil {
		return nil, err
	}
	if u.ID != c.UserID {
		return nil, ErrBadCredentials
	}
	if c.APIKeyID != 0 {
		u.MustChangePassword = false
	}
	return u, nil
}

// CreateSession starts a browser session and returns its cookie token.
// Expired sessions (everyone's) are deleted, and the user's oldest beyond
// MaxSessions end, so the table stays bounded however often people log in.
func (s *Store) CreateSession(ctx context.Context, userID int64, ttl time.Duration) (string, error) {
	token := NewSecret(32)
	now := time.Now().UTC()
	sess := &Session{TokenHash: hashToken(token), UserID: userID, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := s.lockUser(ctx, tx, userID); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*Session)(nil)).Where("expires_at <= ?", now).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to purge expired sessions: %w", err)
		}
		_, err := tx.NewDelete().Model((*Session)(nil)).
			Where("user_id = ?", userID).
			Where("token_hash NOT IN (?)", tx.NewSelect().Model((*Session)(nil)).Column("token_hash").
				Where("user_id = ?", userID).Order("created_at DESC", "token_hash").Limit(MaxSessions-1)).
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to end old sessions of user %d: %w", userID, err)
		}
		if _, err := tx.NewInsert().Model(sess).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to create session: %w", err)
		}
		return recordSignIn(ctx, tx, userID, now)
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// SessionUser returns the user of a live session.
func (s *Store) SessionUser(ctx context.Context, token string) (*User, error) {
	u, _, err := s.AuthenticateSession(ctx, token)
	return u, err
}

// AuthenticateSession returns the user of a live session, with the
// credential it makes.
func (s *Store) AuthenticateSession(ctx context.Context, token string) (*User, Credential, error) {
	hash := hashToken(token)
	u, err := s.liveUser(ctx, "?TableAlias.id = (SELECT user_id FROM sessions WHERE token_hash = ? AND expires_at > ?)",
		hash, time.Now().UTC())
	if err != nil {
		return nil, Credential{}, err
	}
	return u, credentialOf(u, 0, hash), nil
}

// SessionHash returns how a session's token is stored, to name the session
// without its token.
func SessionHash(token string) string { return hashToken(token) }

// DeleteSession ends a session; ending an unknown one is not an error.
func (s *Store) DeleteSession(ctx context.Context, token string) error {
	_, err := s.DB.NewDelete().Model((*Session)(nil)).Where("token_hash = ?", hashToken(token)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to delete session: %w", err)
	}
	return nil
}
