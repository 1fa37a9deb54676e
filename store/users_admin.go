package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/uptrace/bun"
	"golang.org/x/crypto/bcrypt"
)

// Bounds of what a user is made of.
const (
	// MaxUsernameLength keeps usernames displayable.
	MaxUsernameLength = 64
	// MinPasswordLength is the CLI's rule since the start.
	MinPasswordLength = 8
	// MaxPasswordBytes is what bcrypt reads of a password; more would be
	// silently ignored, so it is refused.
	MaxPasswordBytes = 72
	// MaxListedUsers bounds Users.
	MaxListedUsers = 10_000
)

// ErrPasswordChange refuses everything but choosing a new password to a
// session of a user whose password root reset.
var ErrPasswordChange = errors.New("choose a new password first (changePassword)")

func checkUsername(username string) error {
	switch {
	case username == "":
		return Invalid("username", "must not be empty")
	case strings.ContainsAny(username, ": \t\r\n"):
		return Invalid("username", "must not contain spaces or ':'")
	case strings.ContainsFunc(username, unicode.IsControl):
		return Invalid("username", "must not contain control characters")
	case len([]rune(username)) > MaxUsernameLength:
		return Invalid("username", "must have at most %d characters", MaxUsernameLength)
	}
	return nil
}

// ValidatePassword applies the password rules: at least MinPasswordLength
// characters, at most MaxPasswordBytes bytes. The message never repeats the
// password.
func ValidatePassword(password string) error { return passwordRules("password", password) }

func passwordRules(field, password string) error {
	if len([]rune(password)) < MinPasswordLength {
		return Invalid(field, "must have at least %d characters", MinPasswordLength)
	}
	if len(password) > MaxPasswordBytes {
		return Invalid(field, "must have at most %d bytes", MaxPasswordBytes)
	}
	return nil
}

// Users lists the users by username.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	var users []User
	if err := s.reader().NewSelect().Model(&users).Order("username").Limit(MaxListedUsers).Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to list users: %w", err)
	}
	return users, nil
}

// lockRoots locks every root user's row (PostgreSQL) so that two concurrent
// changes cannot both leave no enabled root; SQLite's single writer already
// serialises them.
func (s *Store) lockRoots(ctx context.Context, tx bun.Tx) error {
	if s.Dialect != Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "SELECT id FROM users WHERE scope = 'root' ORDER BY id FOR UPDATE"); err != nil {
		return fmt.Errorf("store: unable to lock root users: %w", err)
	}
	return nil
}

// userForChange locks the users a change of id may touch and returns it.
func (s *Store) userForChange(ctx context.Context, tx bun.Tx, id int64) (*User, error) {
	if err := s.lockRoots(ctx, tx); err != nil {
		return nil, err
	}
	if err := s.lockUser(ctx, tx, id); err != nil {
		return nil, err
	}
	u := new(User)
	if err := tx.NewSelect().Model(u).Where("id = ?", id).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("store: unable to fetch user %d: %w", id, err)
	}
	return u, nil
}

// lastEnabledRoot says whether u is the only enabled root user.
func lastEnabledRoot(ctx context.Context, tx bun.Tx, u *User) (bool, error) {
	if u.Scope != ScopeRoot || !u.Enabled {
		return false, nil
	}
	n, err := tx.NewSelect().Model((*User)(nil)).
		Where("scope = 'root' AND enabled AND id <> ?", u.ID).Count(ctx)
	if err != nil {
		return false, fmt.Errorf("store: unable to count root users: %w", err)
	}
	return n == 0, nil
}

// SetUserEnabled enables or disables a user. Disabling ends the user's
// sessions; their API keys are refused while the user is disabled (see
// liveUserCond). The last enabled root user cannot be disabled. The caller
// announces the revocation, which closes the user's sockets.
func (s *Store) SetUserEnabled(ctx context.Context, id int64, enabled bool) (*User, error) {
	var u *User
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if u, err = s.userForChange(ctx, tx, id); err != nil {
			return err
		}
		if !enabled {
			last, err := lastEnabledRoot(ctx, tx, u)
			if err != nil {
				return err
			}
			if last {
				return Invalid("enabled", "the last enabled root user cannot be disabled")
			}
			if _, err := tx.NewDelete().Model((*Session)(nil)).Where("user_id = ?", id).Exec(ctx); err != nil {
				return fmt.Errorf("store: unable to end the sessions of user %d: %w", id, err)
			}
		}
		if _, err := tx.NewUpdate().Model((*User)(nil)).Set("enabled = ?", enabled).Where("id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to update user %d: %w", id, err)
		}
		u.Enabled = enabled
		return nil
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// DeleteUser deletes a user with their sessions and API keys. The last
// enabled root user cannot be deleted. The caller announces the revocation.
func (s *Store) DeleteUser(ctx context.Context, id int64) (*User, error) {
	var u *User
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if u, err = s.userForChange(ctx, tx, id); err != nil {
			return err
		}
		last, err := lastEnabledRoot(ctx, tx, u)
		if err != nil {
			return err
		}
		if last {
			return Invalid("id", "the last enabled root user cannot be deleted")
		}
		// Explicit rather than trusting ON DELETE CASCADE: SQLite enforces
		// it only with foreign keys on.
		if _, err := tx.NewDelete().Model((*Session)(nil)).Where("user_id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to delete the sessions of user %d: %w", id, err)
		}
		if _, err := tx.NewDelete().Model((*APIKey)(nil)).Where("user_id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to delete the API keys of user %d: %w", id, err)
		}
		if _, err := tx.NewDelete().Model((*User)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to delete user %d: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if u.TenantID != nil {
		s.tenantsWritten() // the tenant's user_num
	}
	return u, nil
}

// ResetUserPassword gives the user a new random password, returned in clear
// this once, ends their sessions, and makes the next session one that can
// only choose a new password.
func (s *Store) ResetUserPassword(ctx context.Context, id int64) (string, error) {
	plain := NewSecret(15) // 20 characters
	hash, err := bcrypt.GenerateFromPassword([]byte(plain), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("store: unable to hash password: %w", err)
	}
	err = s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := s.userForChange(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model((*User)(nil)).
			Set("password_hash = ?", string(hash)).Set("must_change_password = ?", true).
			Where("id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to reset the password of user %d: %w", id, err)
		}
		if _, err := tx.NewDelete().Model((*Session)(nil)).Where("user_id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to end the sessions of user %d: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return plain, nil
}

// ChangePassword sets the user's password when current is theirs, clears
// the forced change, and ends their sessions but keepSession (the hash of
// the caller's session, if any).
func (s *Store) ChangePassword(ctx context.Context, id int64, current, next, keepSession string) error {
	if err := passwordRules("newPassword", next); err != nil {
		return err
	}
	if current == next {
		return Invalid("newPassword", "must differ from the current password")
	}
	u, err := s.UserByID(ctx, id)
	if err != nil {
		return err
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(current)) != nil {
		return Invalid("currentPassword", "is not your password")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(next), bcrypt.DefaultCost)
	if err != nil {
		return fmt.Errorf("store: unable to hash password: %w", err)
	}
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*User)(nil)).
			Set("password_hash = ?", string(hash)).Set("must_change_password = ?", false).
			Where("id = ? AND password_hash = ?", id, u.PasswordHash).Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to change the password of user %d: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return Invalid("currentPassword", "changed meanwhile; sign in again")
		}
		if _, err := tx.NewDelete().Model((*Session)(nil)).
			Where("user_id = ? AND token_hash <> ?", id, keepSession).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to end the sessions of user %d: %w", id, err)
		}
		return nil
	})
}

// recordSignIn notes when the user last signed in.
func recordSignIn(ctx context.Context, tx bun.Tx, userID int64, at time.Time) error {
	if _, err := tx.NewUpdate().Model((*User)(nil)).Set("last_sign_in_at = ?", at).Where("id = ?", userID).Exec(ctx); err != nil {
		return fmt.Errorf("store: unable to record the sign-in of user %d: %w", userID, err)
	}
	return nil
}

// APIKeyOwner returns the id of the key's user.
func (s *Store) APIKeyOwner(ctx context.Context, keyID int64) (int64, error) {
	var owner int64
	err := s.reader().NewSelect().Model((*APIKey)(nil)).Column("user_id").Where("id = ?", keyID).Scan(ctx, &owner)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("store: unable to fetch API key %d: %w", keyID, err)
	}
	return owner, nil
}
