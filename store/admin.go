package store

import (
	"context"
	"errors"
	"fmt"
)

// AdminCredentials is the outcome of EnsureAdmin. Password and APIKey hold
// only the values that were generated, to be printed once.
type AdminCredentials struct {
	Created  bool
	Username string
	Password string
	APIKey   string
}

// EnsureAdmin creates the root user on a database that has no users yet.
// Unset password or key are generated. Several instances starting at once
// create one admin: the losers see the winner's row and do nothing.
func (s *Store) EnsureAdmin(ctx context.Context, username, password, apiKey string) (AdminCredentials, error) {
	out := AdminCredentials{Username: username}
	n, err := s.CountUsers(ctx)
	if err != nil {
		return out, err
	}
	if n > 0 {
		return out, nil
	}
	if password == "" {
		password = NewSecret(18)
		out.Password = password
	}
	u, err := s.CreateUser(ctx, username, password, ScopeRoot, nil)
	if errors.Is(err, ErrConflict) {
		return AdminCredentials{Username: username}, nil
	}
	if err != nil {
		return out, fmt.Errorf("store: unable to create admin: %w", err)
	}
	_, plain, err := s.CreateAPIKey(ctx, u.ID, "admin", apiKey)
	if err != nil {
		return out, err
	}
	if apiKey == "" {
		out.APIKey = plain
	}
	out.Created = true
	return out, nil
}
