package graph

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/store"
)

// UserStore is what the user and API-key resolvers use of the store.
type UserStore interface {
	UserByID(ctx context.Context, id int64) (*store.User, error)
	APIKeys(ctx context.Context, userID int64) ([]store.APIKey, error)
	CreateAPIKey(ctx context.Context, userID int64, name, plain string) (*store.APIKey, string, error)
	RevokeAPIKey(ctx context.Context, userID, keyID int64) error
	APIKeyOwner(ctx context.Context, keyID int64) (int64, error)
	Users(ctx context.Context) ([]store.User, error)
	CreateUser(ctx context.Context, username, password string, scope store.Scope, tenantID *string) (*store.User, error)
	SetUserEnabled(ctx context.Context, id int64, enabled bool) (*store.User, error)
	DeleteUser(ctx context.Context, id int64) (*store.User, error)
	ResetUserPassword(ctx context.Context, id int64) (string, error)
	ChangePassword(ctx context.Context, id int64, current, next, keepSession string) error
	CheckPassword(ctx context.Context, username, password string) (*store.User, error)
	MFAState(ctx context.Context, userID int64) (*store.MFAState, error)
	DisableMFA(ctx context.Context, userID int64) (*store.User, error)
	Tenant(ctx context.Context, id string) (*store.Tenant, error)
}

// errNoMFA refuses MFA mutations on a server built without auth.MFA.
var errNoMFA = errors.New("MFA is not configured on this server")

// mfaCaller returns the caller of an MFA mutation: one signed in with a
// dashboard session. An API key, never subject to MFA, cannot enrol or
// turn MFA off either: a stolen key must not lock its owner out.
func (r *Resolver) mfaCaller(ctx context.Context) (*store.User, error) {
	u, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	if r.MFA == nil {
		return nil, errNoMFA
	}
	if auth.SessionHashFrom(ctx) == "" {
		return nil, fmt.Errorf("%w: MFA is managed from a dashboard session, not with an API key", auth.ErrForbidden)
	}
	return u, nil
}

// allowCode refuses a code or password check to a user with too many
// wrong ones lately (the changePassword throttle, shared).
func (r *Resolver) allowCode(userID int64) error {
	if !r.passwordTries.allow(userID, time.Now()) {
		return store.Invalid("code", "too many wrong codes or passwords; try again in a few minutes")
	}
	return nil
}

// wrongCode turns auth.ErrWrongCode into a field error, counting it against
// the throttle and recording the refusal; other errors pass.
func (r *Resolver) wrongCode(ctx context.Context, u *store.User, field, method string, err error) error {
	if !errors.Is(err, auth.ErrWrongCode) {
		return err
	}
	r.passwordTries.failed(u.ID, time.Now())
	r.Audit.Record(ctx, audit.MFARefused, audit.UserTarget(u.ID, u.Username), map[string]any{"method": method})
	return store.Invalid(field, "wrong or already used code")
}

// signInMethod tells how a user signs in: through SAML when they are a
// user of a tenant whose authentication_method is sso_saml (their password,
// if any, is refused), else with a password. It follows the tenant, so a
// tenant switched to SSO moves its users with it.
func signInMethod(ctx context.Context, db UserStore, u *store.User) (model.SignInMethod, error) {
	if u.Scope != store.ScopeTenant || u.TenantID == nil {
		return model.SignInMethodPassword, nil
	}
	t, err := db.Tenant(ctx, *u.TenantID)
	if errors.Is(err, store.ErrNotFound) {
		return model.SignInMethodPassword, nil
	}
	if err != nil {
		return "", err
	}
	if t.AuthenticationMethod == store.AuthSSOSAML {
		return model.SignInMethodSso, nil
	}
	return model.SignInMethodPassword, nil
}

// parseID reads a numeric id argument, naming the argument when it is not one.
func parseID(field, id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, store.Invalid(field, "%q is not a valid id", id)
	}
	return n, nil
}

// Wrong current passwords given to changePassword are throttled per user
// (on this instance): a stolen session cannot guess the password at
// bcrypt's pace for ever.
const (
	maxPasswordTries    = 5
	passwordTriesWindow = 15 * time.Minute
)

// tries is usable at its zero value.
type tries struct {
	mu sync.Mutex
	m  map[int64][]time.Time
}

func (t *tries) recent(id int64, now time.Time) []time.Time {
	kept := t.m[id][:0]
	for _, at := range t.m[id] {
		if now.Sub(at) < passwordTriesWindow {
			kept = append(kept, at)
		}
	}
	if len(kept) == 0 {
		delete(t.m, id)
		return nil
	}
	t.m[id] = kept
	return kept
}

func (t *tries) allow(id int64, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.recent(id, now)) < maxPasswordTries
}

func (t *tries) failed(id int64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[int64][]time.Time{}
	}
	t.m[id] = append(t.recent(id, now), now)
}
