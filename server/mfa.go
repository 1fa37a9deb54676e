package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/input"
	"github.com/tifeeds/tifeeds/store"
)

// The second step of a password sign-in, for users with MFA on or who must
// enrol (issue 26, point 3). The password step answers a challenge token
// instead of a session; the token is random, kept hashed in the database
// (any instance can finish the sign-in), short-lived, single-use, and void
// after store.MaxMFAChallengeAttempts wrong codes. It travels in the JSON
// bodies only, never in a URL, a cookie or a log.

// mfaStore is what the sign-in's second step asks of the store.
type mfaStore interface {
	MFAState(ctx context.Context, userID int64) (*store.MFAState, error)
	CreateMFAChallenge(ctx context.Context, userID int64, enrol bool, ttl time.Duration) (string, error)
	LiveMFAChallenge(ctx context.Context, token string) (*store.MFAChallenge, *store.User, error)
	FailMFAChallenge(ctx context.Context, token string) error
	ConsumeMFAChallenge(ctx context.Context, token string) (bool, error)
}

// DefaultMFAChallengeTTL is how long a person has, after their password,
// to give a code or enrol.
const DefaultMFAChallengeTTL = 10 * time.Minute

func (s *Server) mfaChallengeTTL() time.Duration {
	if s.cfg.MFAChallengeTTL > 0 {
		return s.cfg.MFAChallengeTTL
	}
	return DefaultMFAChallengeTTL
}

// askMFA answers the password step of a user with MFA on, or of a tenant
// that requires it, with a challenge instead of a session; false when the
// user needs no second factor. It answers the request either way when it
// returns true.
func (s *Server) askMFA(w http.ResponseWriter, r *http.Request, u *store.User) bool {
	st, err := s.accounts.MFAState(r.Context(), u.ID)
	if err != nil {
		writeErr(w, r, err)
		return true
	}
	if !st.Enabled && !st.Required {
		return false
	}
	if s.resolver.MFA == nil {
		s.log.ErrorContext(r.Context(), "A user needs MFA but the server has no MFA configured", "user", u.Username)
		writeUnavailable(w)
		return true
	}
	enrol := !st.Enabled
	token, err := s.accounts.CreateMFAChallenge(r.Context(), u.ID, enrol, s.mfaChallengeTTL())
	if err != nil {
		writeErr(w, r, err)
		return true
	}
	writeJSON(w, http.StatusOK, loginResponse{Username: u.Username, Scope: u.Scope,
		MFARequired: !enrol, MFAEnrolmentRequired: enrol, MFAToken: token})
	return true
}

type mfaEnrolRequest struct {
	MFAToken string `json:"mfa_token"`
}

type mfaEnrolResponse struct {
	// Secret is the TOTP secret as text (base32), for typing into an app.
	Secret string `json:"secret"`
	// OTPAuthURL is the otpauth:// URL the QR code holds.
	OTPAuthURL string `json:"otpauth_url"`
	// QRCode is a PNG data URL.
	QRCode string `json:"qr_code"`
}

type mfaLoginRequest struct {
	MFAToken     string `json:"mfa_token"`
	Code         string `json:"code"`
	RecoveryCode string `json:"recovery_code"`
}

// mfaChallenge reads a live challenge, answering 401 when there is none.
func (s *Server) mfaChallenge(w http.ResponseWriter, r *http.Request, token string) (*store.MFAChallenge, *store.User, bool) {
	if s.resolver.MFA == nil {
		writeError(w, http.StatusNotFound, "not_found", "MFA is not configured on this server")
		return nil, nil, false
	}
	if err := input.CheckString("mfa_token", token); err != nil {
		writeRESTErr(w, r, err, nil)
		return nil, nil, false
	}
	c, u, err := s.accounts.LiveMFAChallenge(r.Context(), token)
	if errors.Is(err, store.ErrBadCredentials) {
		writeError(w, http.StatusUnauthorized, "mfa_token_invalid", "this sign-in has expired or is unknown; sign in again")
		return nil, nil, false
	}
	if err != nil {
		writeErr(w, r, err)
		return nil, nil, false
	}
	return c, u, true
}

// loginMFAEnrol gives a person who must enrol, holding an enrolment
// challenge, a new secret. Asking again replaces it.
func (s *Server) loginMFAEnrol(w http.ResponseWriter, r *http.Request) {
	var req mfaEnrolRequest
	if !s.readLoginBody(w, r, &req, "body must be a JSON object with mfa_token") {
		return
	}
	done, ok := s.loginSlot(w)
	if !ok {
		return
	}
	defer done()
	c, u, ok := s.mfaChallenge(w, r, req.MFAToken)
	if !ok {
		return
	}
	if !c.Enrol {
		writeError(w, http.StatusConflict, "mfa_enrolled", "MFA is already on for this user; send a code")
		return
	}
	e, err := s.resolver.MFA.Begin(r.Context(), u)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, mfaEnrolResponse{Secret: e.Secret, OTPAuthURL: e.URL, QRCode: e.QRCode})
}

// loginMFA ends a sign-in with a code (or, for a user with MFA on, a
// recovery code): the session is made as after a password. An enrolment
// challenge's code confirms the new secret, and the answer carries the
// recovery codes, shown this once. Wrong codes count against the login
// throttle like wrong passwords, and against the challenge.
func (s *Server) loginMFA(w http.ResponseWriter, r *http.Request) {
	var req mfaLoginRequest
	if !s.readLoginBody(w, r, &req, "body must be a JSON object with mfa_token and code or recovery_code") {
		return
	}
	done, ok := s.loginSlot(w)
	if !ok {
		return
	}
	defer done()
	for field, v := range map[string]string{"code": req.Code, "recovery_code": req.RecoveryCode} {
		if len(v) > auth.MaxCodeLength {
			writeJSON(w, http.StatusBadRequest, map[string]apiError{"error": {Code: "invalid_string", Field: field,
				Message: field + " is too long"}})
			return
		}
	}
	if (req.Code == "") == (req.RecoveryCode == "") {
		writeError(w, http.StatusBadRequest, "invalid_json", "send either code or recovery_code")
		return
	}
	c, u, ok := s.mfaChallenge(w, r, req.MFAToken)
	if !ok {
		return
	}
	if c.Enrol && req.RecoveryCode != "" {
		writeError(w, http.StatusBadRequest, "invalid_json", "an enrolment is confirmed with a code of the new secret")
		return
	}
	addr := clientAddr(r, s.cfg.TrustedProxies)
	attempt, wait := s.logins.reserve(u.Username, addr, time.Now())
	if wait > 0 {
		retryAfterHeader(w, wait)
		writeError(w, http.StatusTooManyRequests, "too_many_logins", "too many failed logins; retry later")
		return
	}
	method := "password+totp"
	var recoveryCodes []string
	var err error
	switch {
	case c.Enrol:
		method = "password+totp_enrolment"
		recoveryCodes, err = s.resolver.MFA.Confirm(r.Context(), u.ID, req.Code)
	case req.RecoveryCode != "":
		method = "password+recovery_code"
		err = s.resolver.MFA.Recover(r.Context(), u.ID, req.RecoveryCode)
	default:
		err = s.resolver.MFA.Verify(r.Context(), u.ID, req.Code)
	}
	if errors.Is(err, auth.ErrWrongCode) {
		// The reservation stands as the failure; the code is never recorded.
		if ferr := s.accounts.FailMFAChallenge(r.Context(), req.MFAToken); ferr != nil {
			s.log.ErrorContext(r.Context(), "Unable to count a wrong MFA code", "error", ferr)
		}
		s.resolver.Audit.RecordAs(r.Context(), &u.ID, u.Username, audit.MFARefused, audit.UserTarget(u.ID, u.Username),
			map[string]any{"method": method})
		writeError(w, http.StatusUnauthorized, "wrong_code", "wrong or already used code")
		return
	}
	if err != nil {
		attempt.cancel()
		writeErr(w, r, err)
		return
	}
	attempt.succeeded()
	consumed, err := s.accounts.ConsumeMFAChallenge(r.Context(), req.MFAToken)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	if !consumed { // another request finished this sign-in first
		writeError(w, http.StatusUnauthorized, "mfa_token_invalid", "this sign-in has expired or is unknown; sign in again")
		return
	}
	if c.Enrol {
		s.resolver.Audit.RecordAs(r.Context(), &u.ID, u.Username, audit.UserUpdate, audit.UserTarget(u.ID, u.Username),
			map[string]any{"mfa": "on"})
	}
	s.startSession(w, r, u, method, recoveryCodes)
}
