package graph

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
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
}

// The user mutations: each is one function, so that a record (the audit
// log) is one line in each. The resolvers checked the root scope.

func (r *Resolver) createUser(ctx context.Context, in model.CreateUserInput) (*store.User, error) {
	if in.TenantID != nil && *in.TenantID == "" {
		in.TenantID = nil
	}
	u, err := r.Store.CreateUser(ctx, in.Username, in.Password, in.Scope, in.TenantID)
	if errors.Is(err, store.ErrConflict) {
		err = store.Invalid("username", "%q is taken", in.Username)
	}
	if err != nil {
		return nil, err
	}
	r.Audit.Record(ctx, audit.UserCreate, audit.UserTarget(u.ID, u.Username), audit.Fields(in))
	return u, nil
}

func (r *Resolver) setUserEnabled(ctx context.Context, id int64, enabled bool) (*store.User, error) {
	caller, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	if id == caller.ID && !enabled {
		return nil, store.Invalid("id", "you cannot disable yourself")
	}
	u, err := r.Store.SetUserEnabled(ctx, id, enabled)
	if err != nil {
		return nil, err
	}
	action := audit.UserEnable
	if !enabled {
		action = audit.UserDisable
	}
	r.Audit.Record(ctx, action, audit.UserTarget(u.ID, u.Username), nil)
	if !enabled {
		// Sessions, keys and sockets of the user end here and on every
		// instance: the bus drops cached credentials and sockets re-check.
		r.Events.PublishRevocation(events.Revocation{UserID: id})
	}
	return u, nil
}

func (r *Resolver) deleteUser(ctx context.Context, id int64) error {
	caller, err := auth.UserFrom(ctx)
	if err != nil {
		return err
	}
	if id == caller.ID {
		return store.Invalid("id", "you cannot delete yourself")
	}
	u, err := r.Store.DeleteUser(ctx, id)
	if err != nil {
		return err
	}
	r.Audit.Record(ctx, audit.UserDelete, audit.UserTarget(u.ID, u.Username), nil)
	r.Events.PublishRevocation(events.Revocation{UserID: id})
	return nil
}

func (r *Resolver) resetUserPassword(ctx context.Context, id int64) (string, error) {
	plain, err := r.Store.ResetUserPassword(ctx, id)
	if err != nil {
		return "", err
	}
	// The one-time password is the answer's alone: the record names the user.
	r.Audit.Record(ctx, audit.UserPasswordReset, audit.UserTarget(id, ""), nil)
	// The user's sessions ended: their sockets close.
	r.Events.PublishRevocation(events.Revocation{UserID: id})
	return plain, nil
}

// changePassword changes the caller's own password; a session that must
// choose a new one may call it.
func (r *Resolver) changePassword(ctx context.Context, current, next string) error {
	caller, err := auth.Caller(ctx)
	if err != nil {
		return err
	}
	if len(current) > 4*store.MaxPasswordBytes {
		return store.Invalid("currentPassword", "is not your password")
	}
	if !r.passwordTries.allow(caller.ID, time.Now()) {
		return store.Invalid("currentPassword", "too many wrong passwords; try again in a few minutes")
	}
	if err := r.Store.ChangePassword(ctx, caller.ID, current, next, auth.SessionHashFrom(ctx)); err != nil {
		var v *store.ValidationError
		if errors.As(err, &v) && v.Field == "currentPassword" {
			r.passwordTries.failed(caller.ID, time.Now())
		}
		return err
	}
	r.Audit.Record(ctx, audit.UserUpdate, audit.UserTarget(caller.ID, caller.Username), map[string]any{"password": "changed"})
	// The other sessions ended, and this one's cached user changed.
	r.Events.PublishRevocation(events.Revocation{UserID: caller.ID})
	return nil
}

// parseID reads a numeric id argument, naming the argument when it is not one.
func parseID(field, id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, store.Invalid(field, "%q is not a valid id", id)
	}
	return n, nil
}

var errNotImplemented = errors.New("not implemented yet")

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
