package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// MFA with TOTP (issue 26, point 3). The store keeps the sealed secrets,
// the last TOTP step accepted, the hashed recovery codes and the sign-in
// challenges; package auth computes and checks the codes.

// Bounds of MFA.
const (
	// MaxMFAChallengeAttempts is how many wrong codes one sign-in
	// challenge takes before it is void.
	MaxMFAChallengeAttempts = 5
	// maxMFAChallenges is how many live challenges one user may hold; a new
	// one past it ends the oldest.
	maxMFAChallenges = 5
	// MFARecoveryCodes is how many recovery codes an enrolment gives.
	MFARecoveryCodes = 10
)

// MFAState is a user's MFA as the checks need it: the secrets sealed.
type MFAState struct {
	UserID  int64
	Enabled bool
	// Required: the user's tenant has mfa_enabled.
	Required bool
	// Secret is the sealed secret in force; Pending the sealed secret of an
	// enrolment not yet confirmed.
	Secret, Pending []byte
	LastStep        int64
	RecoveryLeft    int
}

// MFAState returns the user's MFA state.
func (s *Store) MFAState(ctx context.Context, userID int64) (*MFAState, error) {
	var row struct {
		ID         int64  `bun:"id"`
		Enabled    bool   `bun:"mfa_enabled"`
		Required   bool   `bun:"required"`
		Secret     []byte `bun:"mfa_secret"`
		Pending    []byte `bun:"mfa_pending_secret"`
		LastStep   int64  `bun:"mfa_last_step"`
		Recoveries int    `bun:"recoveries"`
	}
	err := s.reader().NewSelect().Table("users").
		Column("id", "mfa_enabled", "mfa_secret", "mfa_pending_secret", "mfa_last_step").
		ColumnExpr(`EXISTS (SELECT 1 FROM tenants WHERE tenants.id = users.tenant_id AND tenants.mfa_enabled) AS required`).
		ColumnExpr(`(SELECT COUNT(*) FROM mfa_recovery_codes WHERE mfa_recovery_codes.user_id = users.id) AS recoveries`).
		Where("id = ?", userID).Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to read the MFA of user %d: %w", userID, err)
	}
	return &MFAState{UserID: row.ID, Enabled: row.Enabled, Required: row.Required, Secret: row.Secret,
		Pending: row.Pending, LastStep: row.LastStep, RecoveryLeft: row.Recoveries}, nil
}

// SetMFAPending keeps the sealed secret of an enrolment until its first
// code confirms it (EnableMFA). A user whose MFA is on cannot begin one:
// root resets it, or the user turns it off first.
func (s *Store) SetMFAPending(ctx context.Context, userID int64, sealed []byte) error {
	res, err := s.DB.NewUpdate().Table("users").Set("mfa_pending_secret = ?", sealed).
		Where("id = ? AND NOT mfa_enabled", userID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to begin the MFA enrolment of user %d: %w", userID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Invalid("mfa", "MFA is already on")
	}
	return nil
}

// EnableMFA confirms an enrolment: the pending secret (still pending, the
// one the code was checked against) becomes the secret in force, step is
// taken as used, and recoveryCodes (in clear, stored hashed) replace any
// others. It answers false when the enrolment changed meanwhile or the
// step was already used.
func (s *Store) EnableMFA(ctx context.Context, userID int64, pending []byte, step int64, recoveryCodes []string) (bool, error) {
	if len(pending) == 0 {
		return false, nil
	}
	ok := false
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := s.lockUser(ctx, tx, userID); err != nil {
			return err
		}
		var cur []byte
		err := tx.NewSelect().Table("users").Column("mfa_pending_secret").
			Where("id = ? AND NOT mfa_enabled AND mfa_last_step < ?", userID, step).Scan(ctx, &cur)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: unable to read the MFA enrolment of user %d: %w", userID, err)
		}
		if !bytes.Equal(cur, pending) {
			return nil
		}
		res, err := tx.NewUpdate().Table("users").
			Set("mfa_secret = mfa_pending_secret").Set("mfa_pending_secret = NULL").
			Set("mfa_enabled = TRUE").Set("mfa_last_step = ?", step).
			Where("id = ? AND NOT mfa_enabled AND mfa_last_step < ?", userID, step).Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to turn on the MFA of user %d: %w", userID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		ok = true
		return replaceRecoveryCodes(ctx, tx, userID, recoveryCodes)
	})
	return ok && err == nil, err
}

// recoveryCode is one unused recovery code, by its SHA-256.
type recoveryCode struct {
	bun.BaseModel `bun:"table:mfa_recovery_codes"`

	UserID   int64  `bun:"user_id,pk"`
	CodeHash string `bun:"code_hash,pk"`
}

func replaceRecoveryCodes(ctx context.Context, tx bun.Tx, userID int64, codes []string) error {
	if _, err := tx.NewDelete().Table("mfa_recovery_codes").Where("user_id = ?", userID).Exec(ctx); err != nil {
		return fmt.Errorf("store: unable to delete the recovery codes of user %d: %w", userID, err)
	}
	if len(codes) == 0 {
		return nil
	}
	rows := make([]recoveryCode, len(codes))
	for i, c := range codes {
		rows[i] = recoveryCode{UserID: userID, CodeHash: hashToken(c)}
	}
	if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return fmt.Errorf("store: unable to store the recovery codes of user %d: %w", userID, err)
	}
	return nil
}

// ReplaceRecoveryCodes gives a user whose MFA is on new recovery codes (in
// clear, stored hashed); the old ones stop working.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, userID int64, codes []string) error {
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := s.lockUser(ctx, tx, userID); err != nil {
			return err
		}
		n, err := tx.NewSelect().Table("users").Where("id = ? AND mfa_enabled", userID).Count(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to read the MFA of user %d: %w", userID, err)
		}
		if n == 0 {
			return Invalid("mfa", "MFA is not on")
		}
		return replaceRecoveryCodes(ctx, tx, userID, codes)
	})
}

// UseMFAStep takes the TOTP step as used by the user: true when no step as
// late was used before. One conditional UPDATE, so two instances cannot
// both accept the same code.
func (s *Store) UseMFAStep(ctx context.Context, userID, step int64) (bool, error) {
	res, err := s.DB.NewUpdate().Table("users").Set("mfa_last_step = ?", step).
		Where("id = ? AND mfa_enabled AND mfa_last_step < ?", userID, step).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("store: unable to use a code of user %d: %w", userID, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// UseRecoveryCode spends one of the user's recovery codes: true when it
// was theirs and unused. The DELETE is the check, so a code works once.
func (s *Store) UseRecoveryCode(ctx context.Context, userID int64, code string) (bool, error) {
	res, err := s.DB.NewDelete().Table("mfa_recovery_codes").
		Where("user_id = ? AND code_hash = ?", userID, hashToken(code)).
		Where("EXISTS (SELECT 1 FROM users WHERE users.id = ? AND users.mfa_enabled)", userID).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("store: unable to use a recovery code of user %d: %w", userID, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// DisableMFA turns the user's MFA off: the secrets and recovery codes go.
// It answers the user, for the audit record. The last step used stays, so
// an old code stays spent.
func (s *Store) DisableMFA(ctx context.Context, userID int64) (*User, error) {
	u := new(User)
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := s.lockUser(ctx, tx, userID); err != nil {
			return err
		}
		if err := tx.NewSelect().Model(u).Where("id = ?", userID).Scan(ctx); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return ErrNotFound
			}
			return fmt.Errorf("store: unable to fetch user %d: %w", userID, err)
		}
		_, err := tx.NewUpdate().Table("users").Set("mfa_enabled = FALSE").Set("mfa_secret = NULL").
			Set("mfa_pending_secret = NULL").Where("id = ?", userID).Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to turn off the MFA of user %d: %w", userID, err)
		}
		if _, err := tx.NewDelete().Table("mfa_challenges").Where("user_id = ?", userID).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to end the MFA challenges of user %d: %w", userID, err)
		}
		return replaceRecoveryCodes(ctx, tx, userID, nil)
	})
	if err != nil {
		return nil, err
	}
	u.MFAEnabled = false
	return u, nil
}

// MFAChallenge is the half-done sign-in of a user whose password was
// right: it lets them send a code (or enrol), never anything else.
type MFAChallenge struct {
	bun.BaseModel `bun:"table:mfa_challenges"`

	TokenHash string    `bun:"token_hash,pk"`
	UserID    int64     `bun:"user_id,notnull"`
	Enrol     bool      `bun:"enrol,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
	Attempts  int       `bun:"attempts,notnull"`
}

// CreateMFAChallenge starts the second step of a sign-in and returns its
// token, stored hashed. Expired challenges (everyone's) are deleted, and
// the user's oldest beyond maxMFAChallenges end.
func (s *Store) CreateMFAChallenge(ctx context.Context, userID int64, enrol bool, ttl time.Duration) (string, error) {
	token := NewSecret(32)
	now := time.Now().UTC()
	c := &MFAChallenge{TokenHash: hashToken(token), UserID: userID, Enrol: enrol, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := s.lockUser(ctx, tx, userID); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*MFAChallenge)(nil)).Where("expires_at <= ?", now).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to purge expired MFA challenges: %w", err)
		}
		_, err := tx.NewDelete().Model((*MFAChallenge)(nil)).
			Where("user_id = ?", userID).
			Where("token_hash NOT IN (?)", tx.NewSelect().Model((*MFAChallenge)(nil)).Column("token_hash").
				Where("user_id = ?", userID).Order("created_at DESC", "token_hash").Limit(maxMFAChallenges-1)).
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to end old MFA challenges of user %d: %w", userID, err)
		}
		if _, err := tx.NewInsert().Model(c).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to create an MFA challenge: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// LiveMFAChallenge returns the challenge of token and its (live) user while
// it is unexpired and has attempts left; ErrBadCredentials otherwise.
func (s *Store) LiveMFAChallenge(ctx context.Context, token string) (*MFAChallenge, *User, error) {
	c := new(MFAChallenge)
	err := s.reader().NewSelect().Model(c).
		Where("token_hash = ? AND expires_at > ? AND attempts < ?", hashToken(token), time.Now().UTC(), MaxMFAChallengeAttempts).
		Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, ErrBadCredentials
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: unable to fetch an MFA challenge: %w", err)
	}
	u, err := s.liveUser(ctx, "?TableAlias.id = ?", c.UserID)
	if err != nil {
		return nil, nil, err
	}
	return c, u, nil
}

// FailMFAChallenge counts a wrong code against the challenge; the one that
// reaches MaxMFAChallengeAttempts deletes it.
func (s *Store) FailMFAChallenge(ctx context.Context, token string) error {
	hash := hashToken(token)
	if _, err := s.DB.NewUpdate().Model((*MFAChallenge)(nil)).Set("attempts = attempts + 1").
		Where("token_hash = ?", hash).Exec(ctx); err != nil {
		return fmt.Errorf("store: unable to count a wrong code: %w", err)
	}
	if _, err := s.DB.NewDelete().Model((*MFAChallenge)(nil)).
		Where("token_hash = ? AND attempts >= ?", hash, MaxMFAChallengeAttempts).Exec(ctx); err != nil {
		return fmt.Errorf("store: unable to end a spent MFA challenge: %w", err)
	}
	return nil
}

// ConsumeMFAChallenge ends the challenge: true for the one caller that
// ended it while it was live, so a challenge makes one session at most.
func (s *Store) ConsumeMFAChallenge(ctx context.Context, token string) (bool, error) {
	res, err := s.DB.NewDelete().Model((*MFAChallenge)(nil)).
		Where("token_hash = ? AND expires_at > ? AND attempts < ?", hashToken(token), time.Now().UTC(), MaxMFAChallengeAttempts).
		Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("store: unable to end an MFA challenge: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
